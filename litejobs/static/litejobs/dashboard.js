// Reloads the litejobs dashboard (#litejobs-dashboard) in place: the page is fetched again and
// its dashboard part swapped in. With the live channel (data-live: the dashboard's websocket
// path, when litejobs[live] is installed) it reloads when the server says something changed,
// at most once a second; without it, or while the socket is down (it is retried with backoff),
// every data-refresh-seconds. The socket's state rides in the part's data-live-state
// (connecting, live, offline) and shows in its badge (#dashboard-live). No framework; a failed
// fetch keeps the last one.
(function () {
  "use strict";
  var GAP = 1000; // at most one fetch a second when told of changes
  var LIVE_REFRESH = 60000; // while live: ages and "as of" still move without changes
  var lastFetch = 0;
  var queued = null;
  var stale = false;
  var liveState = "";

  function current() { return document.getElementById("litejobs-dashboard"); }
  // The badge's words for each state of the live channel.
  function badge(part, state) {
    var shown = part.querySelector("#dashboard-live");
    if (!shown || !state) { return; }
    var seconds = parseInt(part.dataset.refreshSeconds, 10) || 5;
    shown.dataset.state = state;
    shown.textContent = state === "live" ? "live" : state === "offline"
      ? "offline: reloads every " + seconds + " s" : "connecting";
  }
  function reload() {
    lastFetch = Date.now();
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("litejobs-dashboard");
        var shown = current();
        if (fresh && shown) {
          if (liveState) { fresh.dataset.liveState = liveState; badge(fresh, liveState); }
          shown.replaceWith(fresh);
        }
      })
      .catch(function () {});
  }
  function setLive(state) {
    liveState = state;
    var shown = current();
    if (shown) { shown.dataset.liveState = state; badge(shown, state); }
  }
  function soon() {
    if (document.hidden) { stale = true; return; }
    if (queued) { return; }
    queued = window.setTimeout(function () { queued = null; reload(); }, Math.max(0, lastFetch + GAP - Date.now()));
  }

  function refresher() {
    var timer = null;
    var every = 0;
    return function (ms) {
      if (ms === every) { return; }
      if (timer) { window.clearInterval(timer); }
      every = ms;
      timer = window.setInterval(function () { if (!document.hidden) { reload(); } }, ms);
    };
  }

  function live(path, refreshEvery, seconds) {
    var attempts = 0;
    function connect() {
      var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
      var socket;
      setLive("connecting");
      try { socket = new WebSocket(scheme + window.location.host + path); } catch (e) { retry(); return; }
      socket.onmessage = function (message) {
        var data = JSON.parse(message.data);
        if (data.op === "ready") {
          attempts = 0;
          setLive("live");
          refreshEvery(LIVE_REFRESH);
          soon(); // what changed between the render and the socket's opening
        } else if (data.op === "changed") {
          soon();
        }
      };
      socket.onclose = function (closed) {
        setLive("offline");
        refreshEvery(seconds * 1000);
        if (closed.code !== 4403) { retry(); } // 4403: not allowed, the periodic refresh stays
      };
    }
    function retry() {
      refreshEvery(seconds * 1000);
      attempts += 1;
      window.setTimeout(connect, Math.min(60000, 1000 * Math.pow(2, attempts)));
    }
    connect();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var shown = current();
    if (!shown) { return; }
    var seconds = parseInt(shown.dataset.refreshSeconds, 10) || 5;
    var refreshEvery = refresher();
    refreshEvery(seconds * 1000);
    if (shown.dataset.live && window.WebSocket) {
      document.addEventListener("visibilitychange", function () {
        if (!document.hidden && stale) { stale = false; soon(); }
      });
      live(shown.dataset.live, refreshEvery, seconds);
    }
  });
})();
