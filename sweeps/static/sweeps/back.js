// The error page's "back" link: the previous page when there is one (its href, the sweep list, otherwise).
document.getElementById("back").addEventListener("click", function (ev) {
  if (window.history.length > 1) { ev.preventDefault(); window.history.back(); }
});
