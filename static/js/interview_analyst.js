/* The wizard's "Thinking about your answers" page: the analyst model's questions appear as it
   writes them (server-sent events from the interview's analyst/ address), the seconds count,
   and the next page opens when the analyst is done or its bound has passed. Without
   EventSource the page keeps its "Go on without waiting" link. */
(function () {
  "use strict";

  function start(box) {
    if (!box || box.dataset.started || !window.EventSource) return;
    box.dataset.started = "1";
    const asked = box.querySelector("[data-asked]");
    const list = box.querySelector("[data-questions]");
    const status = box.querySelector("[data-status]");
    const elapsed = box.querySelector("[data-elapsed]");
    const source = new EventSource(box.dataset.stream);
    let finished = false;

    function go(url) {
      finished = true;
      source.close();
      window.location.assign(url || box.dataset.next);
    }

    function data(event) {
      try { return JSON.parse(event.data); } catch (error) { return {}; }
    }

    source.addEventListener("question", function (event) {
      const item = document.createElement("li");
      item.textContent = data(event).text || "";
      list.appendChild(item);
      asked.hidden = false;
    });
    source.addEventListener("tick", function (event) {
      elapsed.textContent = " (" + (data(event).seconds || 0) + " s)";
    });
    source.addEventListener("done", function (event) {
      const done = data(event);
      finished = true;
      source.close();
      status.textContent = done.message || "Done.";
      box.classList.add("done");
      // Long enough to read the last line; the next page has the questions too.
      setTimeout(function () { go(done.url); }, done.questions ? 1500 : 800);
    });
    source.onerror = function () {
      if (!finished) go(box.dataset.next); // the stream broke: the next page as it stands
    };
  }

  function scan() { start(document.getElementById("analyst-thinking")); }
  document.addEventListener("htmx:load", scan);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scan);
  else scan();
})();
