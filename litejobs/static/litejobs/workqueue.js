/* litejobs work-queue page: live claims and resolutions over a websocket, inline buttons.
 *
 * The server renders every row with its status (open, mine, theirs, done, cancelled); the
 * stylesheet shows the buttons that status and the claim mode allow. This script keeps the
 * statuses current: it opens the queue's websocket, asks for the state of the rows on screen
 * once the server listens (so nothing between the render and the socket is missed), applies
 * every change other people make, turns claims back to "unclaimed" when their lease runs out,
 * and sends the row buttons with fetch() so acting does not reload the page.
 */
(function () {
  "use strict";
  const root = document.getElementById("workqueue");
  if (!root) { return; }
  const userId = root.dataset.userId;
  const live = document.getElementById("wq-live");
  const banner = document.getElementById("wq-banner");
  const messageList = document.getElementById("wq-messages");
  const form = document.getElementById("wq-form");
  const claimsOn = root.classList.contains("claims-on");
  const resolutions = JSON.parse((document.getElementById("wq-resolutions") || {}).textContent || "{}");
  const zone = root.dataset.tz || "UTC";
  const clockFormat = new Intl.DateTimeFormat("en-GB", {
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false, timeZone: zone,
  });
  const dateFormat = new Intl.DateTimeFormat("en-GB", {
    day: "2-digit", month: "short", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false,
    timeZone: zone,
  });
  const zoneLabel = root.dataset.tzLabel || zone; // as the server writes it: "13:00:05 UTC"
  const DATE_AFTER = 20 * 3600 * 1000; // claims ending further away show their date too
  let offset = Date.parse(root.dataset.now) - Date.now(); // server clock minus ours
  const timers = new Map();
  let arrived = 0;

  function serverNow() { return Date.now() + offset; }
  function syncClock(iso) { if (iso) { offset = Date.parse(iso) - Date.now(); } }
  function setLive(state, text) { live.dataset.state = state; live.textContent = text; }

  function statusOf(item, now) {
    if (item.state === "done" || item.state === "cancelled") { return item.state; }
    if (item.state === "claimed" && item.claim_expires_at && Date.parse(item.claim_expires_at) > now) {
      return String(item.holder_id) === userId ? "mine" : "theirs";
    }
    return "open";
  }

  function strong(text) { const node = document.createElement("strong"); node.textContent = text; return node; }

  function drawClaim(cell, status, item) {
    cell.replaceChildren();
    const ends = item.claim_expires_at ? new Date(item.claim_expires_at) : null;
    const until = !ends ? "" : (ends - serverNow() >= DATE_AFTER ? dateFormat : clockFormat).format(ends).replace(",", "") + " " + zoneLabel;
    if (status === "mine" || status === "theirs") {
      cell.append(strong(status === "mine" ? "you" : (item.holder || "someone")), ", until " + until);
    } else if (status === "done") {
      cell.append("done (" + (resolutions[item.resolution] || item.resolution) + ") by " + item.resolver);
    } else if (status === "cancelled") {
      cell.append("cancelled by " + item.resolver);
    } else {
      cell.append(claimsOn ? "unclaimed" : "open");
    }
  }

  function watchExpiry(row, status, item) {
    clearTimeout(timers.get(item.id));
    timers.delete(item.id);
    if (status !== "mine" && status !== "theirs") { return; }
    const wait = Date.parse(item.claim_expires_at) - serverNow();
    timers.set(item.id, setTimeout(function () { apply(item, true); }, Math.max(wait, 0) + 50));
  }

  function apply(item, flash) {
    const row = document.getElementById("item-" + item.id);
    if (!row) { return false; }
    const status = statusOf(item, serverNow());
    const before = row.dataset.status;
    row.dataset.status = status;
    row.dataset.holderId = item.holder_id === null || item.holder_id === undefined ? "" : item.holder_id;
    row.dataset.expires = item.claim_expires_at || "";
    drawClaim(row.querySelector(".wq-claim"), status, item);
    if (status === "done" || status === "cancelled") {
      const box = row.querySelector("input.action-select");
      if (box) { box.remove(); }
    }
    watchExpiry(row, status, item);
    const mine = document.getElementById("wq-mine");
    if (mine && before !== status && (before === "mine" || status === "mine")) {
      mine.textContent = Math.max(0, Number(mine.textContent) + (status === "mine" ? 1 : -1));
    }
    if (flash && before !== status) {
      row.classList.add("wq-changed");
      setTimeout(function () { row.classList.remove("wq-changed"); }, 1500);
    }
    return true;
  }

  function rowItem(row) {
    return {
      id: Number(row.dataset.id), state: row.dataset.status === "open" ? "open" : "claimed",
      holder_id: row.dataset.holderId, claim_expires_at: row.dataset.expires,
      holder: (row.querySelector(".wq-claim strong") || {}).textContent,
    };
  }

  // Claims already on the page run out by themselves.
  document.querySelectorAll(".wq-row").forEach(function (row) {
    const status = row.dataset.status;
    if (status === "mine" || status === "theirs") { watchExpiry(row, status, rowItem(row)); }
  });

  // People read sentences; a refusal's code rides in the line's class and data-code.
  function say(results, error, errorCode) {
    messageList.replaceChildren();
    const lines = error ? [{ ok: false, message: error, code: errorCode || "" }] : results;
    lines.forEach(function (line) {
      const li = document.createElement("li");
      li.className = line.ok ? "success" : ("error " + (line.code || "")).trim();
      if (!line.ok && line.code) { li.dataset.code = line.code; }
      li.textContent = line.message;
      messageList.append(li);
    });
    messageList.hidden = lines.length === 0;
  }

  // The header's box ticks (or clears) every item on the page, for the bulk actions.
  const toggle = document.getElementById("wq-toggle");
  if (toggle) {
    toggle.addEventListener("change", function () {
      document.querySelectorAll("input.action-select").forEach(function (box) { box.checked = toggle.checked; });
    });
  }

  // Row buttons: sent with fetch, answered with the items' new state.
  form.addEventListener("submit", async function (event) {
    const button = event.submitter;
    if (!button || !button.dataset.inline || !window.fetch) { return; }
    event.preventDefault();
    const data = new FormData(form, button);
    data.delete("item");
    button.disabled = true;
    try {
      const response = await fetch(window.location.pathname + window.location.search, {
        method: "POST", body: data, credentials: "same-origin",
        headers: { "Accept": "application/json" },
      });
      if (!(response.headers.get("Content-Type") || "").includes("application/json")) {
        say([], "The server refused (HTTP " + response.status + "): reload the page (your session may have ended, or you may no longer work this queue).");
        return;
      }
      const answer = await response.json();
      syncClock(answer.now);
      (answer.items || []).forEach(function (item) { apply(item, true); });
      say(answer.results || [], answer.error, answer.error_code);
    } catch (failure) {
      say([], "The server did not answer; check your connection and try again.");
    } finally {
      button.disabled = false;
    }
  });

  // The websocket: other people's claims, releases and resolutions.
  let attempts = 0;
  function watch(socket) {
    const ids = Array.from(document.querySelectorAll(".wq-row"), function (row) { return Number(row.dataset.id); });
    socket.send(JSON.stringify({ op: "watch", ids: ids }));
  }

  function connect() {
    const scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    const socket = new WebSocket(scheme + window.location.host + root.dataset.ws);
    setLive("connecting", "connecting…");
    socket.onmessage = function (message) {
      const data = JSON.parse(message.data);
      syncClock(data.now);
      if (data.op === "ready" || data.op === "resync") {
        watch(socket);
      } else if (data.op === "items") {
        data.items.forEach(function (item) { apply(item, false); });
        attempts = 0;
        setLive("live", "live");
      } else if (data.op === "insert") {
        arrived += data.count || 1;
        banner.querySelector("span").textContent = arrived + (arrived === 1 ? " new item arrived." : " new items arrived.");
        banner.hidden = false;
      } else if (data.op === "update") {
        apply(data, true);
      }
    };
    socket.onclose = function (closed) {
      if (closed.code === 4403) { setLive("offline", "not allowed: reload the page"); return; }
      setLive("offline", "offline: reconnecting…");
      attempts += 1;
      setTimeout(connect, Math.min(10000, 250 * Math.pow(2, attempts)));
    };
  }
  if (!root.dataset.ws) {
    // This server has no live updates (channels is not installed): the page says so.
  } else if (window.WebSocket) { connect(); } else { setLive("offline", "no live updates in this browser"); }
})();
