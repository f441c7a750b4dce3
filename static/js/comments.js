/* Comment threads (templates/projects/_comments.html): a comment.changed event on the page's
   socket re-fetches the thread it names, wherever that thread is shown on the page; nothing
   else is re-fetched for it. A socket that opens again re-fetches every thread, so a comment
   written while it was closed is not missed. Without JavaScript the forms post as usual. */
(function () {
  "use strict";

  function announce(text) {
    const region = document.getElementById("live-status");
    if (region && text) region.textContent = text;
  }

  function refresh(list) {
    if (list.classList.contains("htmx-request")) {  // the previous answer is on its way
      setTimeout(function () { refresh(list); }, 250);
      return;
    }
    htmx.trigger(list, "comments-update");
  }

  // Capture phase: before portal.js (bubble phase), which would re-fetch the run's live part.
  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    let payload;
    try { payload = JSON.parse(event.detail.message); } catch (error) { return; }
    if (!payload || payload.kind !== "comment.changed") return;
    event.preventDefault();  // JSON, not HTML: nothing for htmx to swap
    event.stopImmediatePropagation();
    const data = payload.data || {};
    document.querySelectorAll("[data-thread]").forEach(function (list) {
      if (list.dataset.thread === String(data.thread)) refresh(list);
    });
    const nav = document.getElementById("nav-portal");  // a mention may ring the bell
    if (nav) htmx.trigger(nav, "portal-live");
    announce(data.message);
  }, true);

  document.addEventListener("htmx:wsOpen", function (event) {
    const socket = event.target.closest && event.target.closest("[data-live-target]");
    if (!socket || socket.dataset.live !== "closed") return;  // first opening: the page is fresh
    document.querySelectorAll("[data-thread]").forEach(refresh);
  }, true);
})();
