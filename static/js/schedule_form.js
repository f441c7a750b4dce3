/* The schedule form of a tool's page (templates/tools/_schedules.html): shows only the fields
   the chosen rhythm uses, and inserts a period placeholder at the cursor of the input. An
   enhancement: without it every field shows, and the placeholders are listed to copy. */
(function () {
  "use strict";

  function setUp(form) {
    const often = form.querySelector("[name=every]");
    const parts = form.querySelectorAll("[data-for]");
    function show() {
      parts.forEach(function (part) {
        part.hidden = often && part.dataset.for.split(" ").indexOf(often.value) === -1;
      });
    }
    if (often) {
      often.addEventListener("change", show);
      show();
    }

    const insert = form.querySelector("[data-insert-period]");
    const picker = form.querySelector("#schedule-period");
    const said = form.querySelector("#schedule-period-said");
    if (!insert || !picker) return;
    const input = document.getElementById(insert.dataset.target);
    if (!input) return;
    insert.hidden = false;
    insert.addEventListener("click", function () {
      const token = "{{" + picker.value + "}}";
      const start = typeof input.selectionStart === "number" ? input.selectionStart : input.value.length;
      const end = typeof input.selectionEnd === "number" ? input.selectionEnd : start;
      input.setRangeText(token, start, end, "end");
      input.focus();
      if (said) said.textContent = "Put " + token + " in the input.";
    });
  }

  document.querySelectorAll("form[data-schedule-form]").forEach(setUp);
})();
