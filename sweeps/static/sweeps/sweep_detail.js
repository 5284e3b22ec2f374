// The sweep page's live progress and table, polled until the sweep finishes.
(function () {
  const box = document.getElementById("progress");
  const bar = document.getElementById("bar");
  bar.style.width = bar.dataset.percent + "%";  // a CSSOM write: the policy refuses style attributes
  if (box.dataset.finished === "1") return;
  const initialStatus = box.dataset.status;
  const set = (id, text) => { document.getElementById(id).textContent = text; };
  // The comparison table's cells, updated in place: a number, or "—" with its reason when not final.
  function table(t) {
    const trs = document.querySelectorAll("#results tbody tr");
    t.rows.forEach((row, i) => {
      const tr = trs[i];
      if (!tr) return;
      row.cells.forEach((c) => {
        const a = tr.querySelector('td[data-col="' + c.col + '"] a');
        if (!a) return;
        a.textContent = c.value === null ? "—" : c.value;
        a.href = c.url;
        if (c.title) a.title = c.title; else a.removeAttribute("title");
      });
      const w = tr.querySelector('td[data-col="waiting"] a');
      if (w) w.textContent = row.waiting;
    });
    document.getElementById("results").dataset.partial = t.partial ? "1" : "0";
    document.getElementById("table-partial").hidden = !t.partial;
  }
  async function poll() {
    try {
      const r = await fetch(box.dataset.url, {headers: {"Accept": "application/json"}});
      if (!r.ok) throw new Error(r.status);
      const p = await r.json();
      bar.style.width = p.percent + "%";
      box.querySelector(".bar").setAttribute("aria-valuenow", p.percent);
      set("chunks", p.chunks_stored + " / " + p.total_chunks);
      set("percent", p.percent);
      set("scenarios", p.scenarios);
      set("rate", p.rate);
      set("eta", p.eta_range ? "about " + Math.round(p.eta_range[0]) + "–" + Math.round(p.eta_range[1]) + " s" : "—");
      set("open-questions", p.open_questions);
      set("status", p.status);
      document.getElementById("status").className = "status status-" + p.status;
      const err = document.getElementById("error");
      err.textContent = p.error; err.hidden = !p.error;
      table(p.table);
      if (p.status !== initialStatus || p.finished) { window.location.reload(); return; }
    } catch (e) { /* a missed poll: try again */ }
    setTimeout(poll, 1500);
  }
  setTimeout(poll, 1000);
})();
