// The launch form: an uploaded file selects "upload"; the planned size follows the form's fields.
(function () {
  const form = document.querySelector("#launch form"), planBox = document.getElementById("plan");
  const planText = document.getElementById("plan-text"), file = form.querySelector("input[name=job_file]");
  // Choosing a job file means sweeping it: switch the source to "upload".
  file.addEventListener("change", function () {
    if (file.files.length) form.querySelector("input[name=job][value=upload]").checked = true;
  });
  // The planned size (chunks, scenarios, time) of what the form says now, before anything is launched.
  let asked = 0, timer = null;
  async function plan() {
    const mine = ++asked;
    planText.textContent = "computing…";
    try {
      const r = await fetch(planBox.dataset.url, {method: "POST", body: new FormData(form),
                                                  headers: {"Accept": "application/json"}});
      const p = await r.json();
      if (mine !== asked) return;  // a later change asked again
      planText.textContent = r.ok ? p.text : "— (" + (p.errors || ["cannot plan"]).join("; ") + ")";
      planBox.dataset.scenarios = r.ok ? p.scenarios : "";
    } catch (e) {
      if (mine === asked) planText.textContent = "— (cannot reach the site)";
    }
  }
  form.addEventListener("change", function () { clearTimeout(timer); timer = setTimeout(plan, 150); });
  form.addEventListener("input", function (ev) {
    if (ev.target.name === "runs") { clearTimeout(timer); timer = setTimeout(plan, 400); }
  });
  if (planBox.dataset.bound === "1") plan();  // the form came back with errors: plan what it says
})();
