// The heatmap page's maps: each figure is read from its <script type="application/json"> tag (no inline
// script: the Content-Security-Policy allows scripts from this site's static files only).
(function () {
  if (typeof Plotly === "undefined") { document.getElementById("plotly-missing").hidden = false; return; }
  const form = document.getElementById("heatmap-options"), metric = document.getElementById("metric");
  const maps = [];
  function draw(divId, dataId, target) {
    const div = document.getElementById(divId), data = document.getElementById(dataId);
    if (!div || !data) return;
    const fig = JSON.parse(data.textContent);
    Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
    maps.push({div: div, fig: fig});
    div.on("plotly_click", function (ev) {
      const p = ev.points && ev.points[0];
      if (!p || p.z === null || p.z === undefined) return;
      const url = target(div, p);
      if (url) window.location.href = url;
    });
  }
  const q = encodeURIComponent;
  // A first-map cell: its scenarios, the list stating the clicked metric's sum over them.
  draw("heatmap-first", "fig-first",
       (div, p) => div.dataset.url + "?config=" + q(p.y) + "&first_point=" + q(p.x) + "&sum=" + q(metric.value));
  const timeline = (div, id) => id ? div.dataset.scenarioUrl.replace(/0\/$/, q(id) + "/") +
    "?back=" + q(window.location.pathname + window.location.search) : null;
  // A second-map cell is one scenario (its ID in customdata): its timeline, with the way back here;
  // at depth 3, the third map of its (first, second) pair.
  draw("heatmap-second", "fig-second", function (div, p) {
    if (!div.dataset.third) return timeline(div, p.customdata && p.customdata[2]);
    const url = new URL(window.location.href);
    url.searchParams.set("metric", metric.value);
    url.searchParams.set("first", p.x);
    url.searchParams.set("second", p.y);
    url.hash = "third";
    return url.toString();
  });
  // A third-map cell is one thrice scenario: its timeline.
  draw("heatmap-third", "fig-third", (div, p) => timeline(div, p.customdata && p.customdata[1]));
  // Another metric: every map swaps its values in place (the figure carries them all), and the URL
  // follows, so a reload or the way back from a timeline keeps it.
  metric.addEventListener("change", function () {
    for (const m of maps) {
      const view = m.fig.metrics && m.fig.metrics[metric.value];
      if (view) Plotly.update(m.div, view.restyle, view.relayout);
    }
    const url = new URL(window.location.href);
    url.searchParams.set("metric", metric.value);
    window.history.replaceState(null, "", url);
  });
  document.getElementById("config").addEventListener("change", function () {
    // Another configuration has other (first, second) pairs: its third map is chosen anew.
    for (const id of ["first", "second"]) { const input = document.getElementById(id); if (input) input.value = ""; }
    form.submit();
  });
})();
