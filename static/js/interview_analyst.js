/* The wizard's "Thinking about your answers" page: it starts the analyst's round (a POST to the
   interview's analyst/ address; the round runs on the server within the analyst's bound), then
   polls the same address every second, showing each question as the model writes it and
   counting the seconds, and opens the next page when the round is done. Should no answer come
   (the bound plus a margin), the next page opens as it stands. Without fetch the page keeps its
   "Go on without waiting" link. */
(function () {
  "use strict";

  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"]; }
    catch (error) { return ""; }
  }

  function start(box) {
    if (!box || box.dataset.started || !window.fetch) return;
    box.dataset.started = "1";
    const url = box.dataset.analyst;
    const asked = box.querySelector("[data-asked]");
    const list = box.querySelector("[data-questions]");
    const status = box.querySelector("[data-status]");
    const elapsed = box.querySelector("[data-elapsed]");
    const started = Date.now();
    const giveUpMs = (Number(box.dataset.bound) + 10) * 1000;
    let finished = false;

    function show(questions) {
      for (let index = list.children.length; index < questions.length; index++) {
        const item = document.createElement("li");
        item.textContent = questions[index];
        list.appendChild(item);
        asked.hidden = false;
      }
    }

    // The next page comes as the wizard's other steps do: swapped in by htmx, its address
    // pushed (a full load without htmx).
    function go(next) {
      finished = true;
      const target = next || box.dataset.next;
      if (!window.htmx || !document.getElementById("wizard")) {
        window.location.assign(target);
        return;
      }
      window.htmx.ajax("GET", target, { target: "#wizard", swap: "outerHTML" }).then(
        function () { window.history.pushState({}, "", target); },
        function () { window.location.assign(target); });
    }

    function answer(data) {
      if (finished || !data) return;
      show(data.questions || []);
      const done = data.done;
      if (!done) return;
      finished = true;
      show(done.questions || []);
      if (done.message) status.textContent = done.message;
      box.classList.add("done");
      // Long enough to read the line; the next page has the questions too.
      setTimeout(function () { go(done.url); }, (done.questions || []).length ? 1500 : 800);
    }

    function ask(options) {
      return fetch(url, Object.assign({ credentials: "same-origin",
                                        headers: { Accept: "application/json",
                                                   "X-CSRFToken": csrfToken() } }, options))
        .then(function (response) { return response.ok ? response.json() : null; })
        .then(answer);
    }

    function poll() {
      if (finished) return;
      const spent = Date.now() - started;
      elapsed.textContent = " (" + Math.floor(spent / 1000) + " s)";
      if (spent > giveUpMs) { go(box.dataset.next); return; }
      ask({}).catch(function () {}).then(function () {
        if (!finished) setTimeout(poll, 1000);
      });
    }

    ask({ method: "POST" }).catch(function () {}).then(function () {
      if (!finished) setTimeout(poll, 500);
    });
  }

  function scan() { start(document.getElementById("analyst-thinking")); }
  document.addEventListener("htmx:load", scan);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", scan);
  else scan();
})();
