/* Run page: the reply a model is writing, shown as it streams (run.llm_stream events on the
   run's socket, at most two a second). These events are progress, not state: they fill the
   #llm-stream panel and nothing else, so the page does not re-fetch its live part for each. */
(function () {
  "use strict";

  const STATES = {
    reading: "is reading the prompt",
    writing: "is writing",
    done: "finished its reply",
    cut: "was stopped at the end of the run's time budget",
    failed: "could not finish its reply",
  };

  const STREAMING = new Set(["reading", "writing"]);

  function announce(text) {
    const region = document.getElementById("live-status");
    if (region) region.textContent = text;
  }

  function show(data) {
    const panel = document.getElementById("llm-stream");
    if (!panel || String(data.run_id) !== panel.dataset.run) return;
    const heading = "The " + data.role + " " + (STATES[data.state] || data.state);
    panel.querySelector("[data-stream=heading]").textContent = heading;
    panel.querySelector("[data-stream=tokens]").textContent = String(data.tokens || 0);
    panel.querySelector("[data-stream=so-far]").hidden = !STREAMING.has(data.state);
    const tail = panel.querySelector("[data-stream=tail]");
    tail.textContent = data.tail || "";
    tail.scrollTop = tail.scrollHeight;
    // Screen readers hear when the state changes, not every half-second update.
    if (panel.dataset.state !== data.state || panel.dataset.role !== data.role) announce(heading + ".");
    panel.dataset.state = data.state;
    panel.dataset.role = data.role;
    panel.hidden = false;
  }

  // Capture phase on the document: this runs before portal.js's listener (bubble phase), which
  // would re-fetch the live part and announce every one of these events.
  document.addEventListener("htmx:wsBeforeMessage", function (event) {
    let payload;
    try { payload = JSON.parse(event.detail.message); } catch (error) { return; }
    if (!payload || payload.kind !== "run.llm_stream") return;
    event.preventDefault(); // JSON, not HTML: nothing for htmx to swap
    event.stopImmediatePropagation();
    show(payload.data || {});
  }, true);
})();
