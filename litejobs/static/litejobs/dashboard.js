// Reloads the litejobs dashboard (#litejobs-dashboard) in place every few seconds: the page is
// fetched again and its dashboard part swapped in. No framework; a failed fetch keeps the
// last one and tries again at the next tick.
(function () {
  "use strict";
  function current() { return document.getElementById("litejobs-dashboard"); }
  function reload() {
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("litejobs-dashboard");
        var shown = current();
        if (fresh && shown) { shown.replaceWith(fresh); }
      })
      .catch(function () {});
  }
  document.addEventListener("DOMContentLoaded", function () {
    var shown = current();
    if (!shown) { return; }
    var seconds = parseInt(shown.dataset.refreshSeconds, 10) || 5;
    window.setInterval(function () { if (!document.hidden) { reload(); } }, seconds * 1000);
  });
})();
