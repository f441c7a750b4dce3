/* Autocoder portal: live updates, focus kept across swaps, drag and drop on the queue.
   Everything here is an enhancement: every action also works as a plain link or form. */
(function () {
  "use strict";

  // -- focus: a swapped fragment replaces the focused element; give focus back to its twin ------
  let focusedId = null;
  document.addEventListener("htmx:beforeSwap", function () {
    const active = document.activeElement;
    focusedId = active && active !== document.body && active.id ? active.id : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!focusedId || (document.activeElement && document.activeElement !== document.body)) return;
    const twin = document.getElementById(focusedId);
    if (twin && !twin.disabled) twin.focus();
    focusedId = null;
  });

  // -- live updates: the server sends JSON events; the page re-fetches what it shows -----------
  // A burst of events (every step of every run) becomes one re-fetch 250 ms after its first
  // event, and another one after it if events kept coming: never starved, never a storm.
  let dragging = null;
  const scheduled = new Set();

  function refreshSoon(selector, eventName) {
    const key = selector + " " + eventName;
    if (scheduled.has(key)) return;
    scheduled.add(key);
    setTimeout(function fire() {
      const target = document.querySelector(selector);
      if (!target) { scheduled.delete(key); return; }
      // Not while a card is being dragged or the previous answer is on its way.
      if (dragging || target.classList.contains("htmx-request")) { setTimeout(fire, 250); return; }
      scheduled.delete(key);
      htmx.trigger(target, eventName);
    }, 250);
  }

  function announce(text) {
    const region = document.getElementById("live-status");
    if (region && text) region.textContent = text;
  }

  function describe(payload) {
    const data = payload.data || payload;
    if (data.message) return data.message;
    const what = String(payload.kind || payload.type || "update").replace(/[._]/g, " ");
    const name = data.name || data.project_name || "";
    const by = data.by ? " by " + data.by : "";
    return "Live update: " + (name ? name + ", " : "") + what + by + ".";
  }

  // The socket's state is on its element (data-live="open" / "closed"). Events sent while it was
  // closed are gone, so a socket that opens again (htmx reconnects by itself) re-fetches what
  // the page shows instead of waiting for the next event.
  function liveSocket(event) {
    return event.target.closest && event.target.closest("[data-live-target]");
  }

  document.addEventListener("htmx:wsOpen", function (event) {
    const socket = liveSocket(event);
    if (!socket) return;
    if (socket.dataset.live === "closed") refreshSoon(socket.dataset.liveTarget, "live-update");
    socket.dataset.live = "open";
  });

  document.addEventListener("htmx:wsClose", function (event) {
    const socket = liveSocket(event);
    if (socket) socket.dataset.live = "closed";
  });

  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    let payload;
    try { payload = JSON.parse(event.detail.message); } catch (error) { return; } // HTML: htmx swaps it
    event.preventDefault();
    const socket = event.target.closest("[data-live-target]");
    if (socket) refreshSoon(socket.dataset.liveTarget, "live-update");
    refreshSoon("#nav-portal", "portal-live");  // the nav's counters
    announce(describe(payload));
  });

  // -- the queue: drag a card, drop it; the server decides and sends the board back -------------
  function cardAfter(list, y) {
    const cards = Array.from(list.querySelectorAll("li[data-project]:not(.dragging)"));
    return cards.find(function (card) {
      const box = card.getBoundingClientRect();
      return y < box.top + box.height / 2;
    }) || null;
  }

  document.addEventListener("dragstart", function (event) {
    const card = event.target.closest && event.target.closest("li[data-project]");
    if (!card) return;
    dragging = card;
    card.classList.add("dragging");
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", card.dataset.project);
  });

  document.addEventListener("dragover", function (event) {
    if (!dragging) return;
    const list = event.target.closest && event.target.closest("ol[data-queue-url]");
    if (!list || !list.contains(dragging)) return;
    event.preventDefault();
    const next = cardAfter(list, event.clientY);
    if (next !== dragging.nextElementSibling) list.insertBefore(dragging, next);
  });

  document.addEventListener("drop", function (event) { if (dragging) event.preventDefault(); });

  // -- copy buttons: data-copy names the element whose text goes to the clipboard ----------------
  // Hidden in the HTML, shown here: without JavaScript (or a clipboard) there is no dead button.
  function showCopyButtons(root) {
    if (!navigator.clipboard) return;
    root.querySelectorAll("button[data-copy]").forEach(function (button) { button.hidden = false; });
  }
  document.addEventListener("DOMContentLoaded", function () { showCopyButtons(document); });
  document.addEventListener("htmx:afterSettle", function (event) { showCopyButtons(event.target); });
  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    const source = document.querySelector(button.dataset.copy);
    if (!source) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      const label = button.textContent;
      button.textContent = "Copied";
      announce("Copied to the clipboard.");
      setTimeout(function () { button.textContent = label; }, 2000);
    }, function () { announce("Copying was refused by the browser: select the text instead."); });
  });

  // -- a select marked data-autosubmit sends its form on change (no inline handler: the CSP) --
  document.addEventListener("change", function (event) {
    const field = event.target;
    if (field.matches && field.matches("select[data-autosubmit]") && field.form) {
      field.form.requestSubmit ? field.form.requestSubmit() : field.form.submit();
    }
  });

  // The wizard's busy line counts the seconds while the analyst model thinks (it has a bound,
  // which the line states), so a long wait shows as progress rather than a frozen page.
  let busyTimer = null;
  document.addEventListener("htmx:beforeRequest", function () {
    const elapsed = document.querySelector("#analyst-busy [data-elapsed]");
    if (!elapsed) return;
    const started = Date.now();
    clearInterval(busyTimer);
    elapsed.hidden = true;
    busyTimer = setInterval(function () {
      const seconds = Math.floor((Date.now() - started) / 1000);
      elapsed.textContent = " (" + seconds + " s)";
      elapsed.hidden = seconds < 1;
    }, 500);
  });
  document.addEventListener("htmx:afterRequest", function () { clearInterval(busyTimer); });

  document.addEventListener("dragend", function () {
    const card = dragging;
    if (!card) return;
    dragging = null;
    card.classList.remove("dragging");
    const list = card.closest("ol[data-queue-url]");
    const previous = card.previousElementSibling;
    const filters = document.getElementById("board-filters");
    const values = filters ? Object.fromEntries(new FormData(filters)) : {};
    values.after = previous ? previous.dataset.project : "";
    const token = document.querySelector("[name=csrfmiddlewaretoken]");
    if (token) values.csrfmiddlewaretoken = token.value;
    const url = list.dataset.queueUrl.replace(/\/0\/move\/$/, "/" + card.dataset.project + "/move/");
    htmx.ajax("POST", url, {source: list, target: "#board", swap: "outerHTML", values: values});
    announce("Moved " + (card.querySelector(".card-name") || card).textContent.trim() + ".");
  });
})();
