"""The conditions a sweep is swept under, each declared once: what a crash does (the crash model,
fsync) and how the world misbehaves (agentcore.standins.faults: the tracker, a flaky tool, the scripted person,
the model, and the seed of their random choices). Every default is the chapter's world.

Rules:
- A condition is one `Condition` in CONDITIONS, whose order every list of them keeps: its name (the
  configuration's field, the sweep's column, the form's field, the exports' column), its type and
  default, its title (a label, the word of its messages), its help (one line) and `explained` (each
  spelling's meaning), and how it is written: closed `choices` ((text, title) pairs; a bool's texts
  are "on" and "off"), or open `spellings` that `parse` takes (agentcore.standins.faults' parsers raise
  ConfigError listing them), with the `suggestions` a form offers.
- Everything else is derived from the declarations: agentcore.config's Config fields, checks and
  `conditions()` words, agentcore.cli's options, and the dashboard's form fields, columns, admin,
  compare page and exports. A new condition is a declaration here (and the dashboard's migration).
- A value is written for people and the command line as `text(value)` and read back by `value(text)`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agentcore import crashmodels
from agentcore.errors import ConfigError
from agentcore.standins import faults

__all__ = ["CONDITIONS", "CRASH_MODELS", "DEFAULTS", "NAMED", "Condition", "words"]


@dataclass(frozen=True)
class Condition:
    name: str
    type: type
    default: object
    title: str
    help: str
    section: str  # "crash": what a crash does; "world": how the world misbehaves (the form's two sections)
    choices: tuple[tuple[str, str], ...] = ()  # a closed set of texts with their titles
    parse: Callable[[str], object] | None = None  # takes a spelling or raises ConfigError saying the spellings
    spellings: tuple[str, ...] = ()  # how it is written, as messages list it ("ttl:N")
    suggestions: tuple[str, ...] = ()  # spellings a form offers beside an open field
    explained: str = ""  # the longer help (the form's, the command line's); `help` if empty
    option: str = ""  # the command line's option; --NAME-WITH-DASHES if empty
    says: str = ""  # how `words` says a value ("{}" the value alone); "TITLE: {}" if empty
    always: bool = False  # `words` says it at its default too
    matters: Callable[[Mapping[str, object]], bool] | None = None  # `words` says it only where this holds
    minimum: int = 0  # a whole number's least value

    @property
    def values(self) -> tuple[str, ...]:
        """A closed condition's texts, in order."""
        return tuple(text for text, _ in self.choices)

    @property
    def flag(self) -> str:
        return self.option or "--" + self.name.replace("_", "-")

    @property
    def long_help(self) -> str:
        return self.explained or self.help

    def text(self, value: object) -> object:
        """The value as the command line writes it: "on"/"off" for a bool, else the value itself."""
        if self.type is bool:
            return "on" if value else "off"
        return value

    def value(self, text: object) -> object:
        """The value a text of `text` writes ("on" -> True for a bool), else the text itself."""
        return text == "on" if self.type is bool else text

    def check(self, value: object) -> None:
        """Raises ConfigError (a message listing the spellings) for a value agentcore cannot play."""
        if self.parse is not None:
            self.parse(value)  # type: ignore[arg-type]
        elif self.choices and self.type is str and value not in self.values:
            raise ConfigError(f"unknown {self.title} {value!r} (choose from {', '.join(self.values)})")
        elif self.type is int and (type(value) is not int or value < self.minimum):
            raise ConfigError(f"{self.title} must be a whole number from {self.minimum}, not {value!r}")

    def said(self, value: object) -> str:
        return (self.says or self.title + ": {}").format(self.text(value))


def _titled(titles: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(titles.items())


CONDITIONS: tuple[Condition, ...] = (
    Condition(
        "crash_model",
        str,
        "panic",
        "crash model",
        "what a crash leaves of the checkpoint files",
        "crash",
        choices=_titled({m.name: m.title for m in crashmodels.CRASH_MODELS.values()}),
        says="{}",
        always=True,
    ),
    Condition(
        "fsync",
        bool,
        True,
        "fsync",
        "the checkpoint store syncs its files and folder",
        "crash",
        choices=(("on", "on: each save syncs the file and its folder"), ("off", "off: no sync")),
        explained="whether the checkpoint store syncs what it saves",
        says="fsync {}",
        always=True,
    ),
    Condition(
        "tracker_fault",
        str,
        "none",
        "tracker fault",
        "none, crash (it can crash too), ttl:N (it forgets keys after N requests) or strict-params",
        "world",
        parse=faults.tracker_fault,
        spellings=faults.TRACKER_FAULTS,
        suggestions=("none", "crash", "ttl:5", "strict-params"),
        explained="none: it never fails; crash: it can crash too; ttl:N: it forgets keys after N requests; "
        "strict-params: it refuses a key repeated with other arguments",
    ),
    Condition(
        "tool_faults",
        str,
        "first",
        "tool faults",
        "first, k:N or always: which attempts of a flaky tool's changing call fail",
        "world",
        parse=faults.tool_failures,
        spellings=faults.TOOL_FAULTS,
        suggestions=("first", "k:2", "always"),
        explained="first: a flaky tool fails the first attempt of each changing call; k:N: the first N "
        "attempts; always: every attempt (designs with a flaky tool only)",
    ),
    Condition(
        "person_faults",
        str,
        "truthful",
        "person faults",
        "truthful, deny:P, wrong:P or adversarial: how the scripted person answers",
        "world",
        parse=faults.person_faults,
        spellings=faults.PERSON_FAULTS,
        suggestions=("truthful", "deny:0.5", "wrong:0.5", "adversarial"),
        explained="how the scripted person answers: truthful; deny:P: denies an approval with probability "
        'P; wrong:P: answers "did it happen?" wrong with probability P; adversarial: always wrong',
        option="--person",
        says="person: {}",
    ),
    Condition(
        "model",
        str,
        "fixed",
        "model",
        "what the model replies when asked again",
        "world",
        choices=_titled(
            {
                "fixed": "fixed: asked again, the same reply with the same call IDs",
                "fresh-ids": "fresh-ids: the same calls under new call IDs",
                "fickle": "fickle: other calls (seeded)",
            }
        ),
        parse=faults.model,
        spellings=faults.MODELS,
        explained="what the model replies when a restart asks it again",
    ),
    Condition(
        "seed",
        int,
        0,
        "seed",
        "seeds the person's and the model's random choices",
        "world",
        explained="seeds the person's and the model's random choices: the same seed, the same sweep",
        matters=lambda c: c["model"] == "fickle" or c["person_faults"] != "truthful",
    ),
)
NAMED = {c.name: c for c in CONDITIONS}
# The conditions a target's sweep takes (agentcore.port: the world its fork server holds); the
# others act on agentcore's own loop and store, and are refused for a target, never ignored.
TARGET_TAKES = ("model", "seed", "tracker_fault", "person_faults")
DEFAULTS = {c.name: c.default for c in CONDITIONS}
CRASH_MODELS = NAMED["crash_model"].values
assert NAMED["model"].values == faults.MODELS, "the model's titles are agentcore.standins.faults' models, in order"


def words(values: Mapping[str, object]) -> str:
    """The conditions in words: each one `always` said, then each other one not at its default where
    it `matters` ("power-cut, fsync off, tracker fault: crash"). `values`: every condition's."""
    return ", ".join(
        c.said(values[c.name])
        for c in CONDITIONS
        if c.always or (values[c.name] != c.default and (c.matters is None or c.matters(values)))
    )
