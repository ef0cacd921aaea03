// Every page: a table wider than the window says so (a hint above it and a shadow on the cut
// edge), and a report's label-set choice is written into the address so a copied link keeps it.
(function () {
  "use strict";

  function markOverflow(box) {
    const more = box.scrollWidth - box.clientWidth > 1;
    box.classList.toggle("overflowing", more);
    box.classList.toggle("scrolled-to-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
    let hint = box.previousElementSibling;
    if (!hint || !hint.classList.contains("scroll-hint")) {
      if (!more) return;
      hint = document.createElement("p");
      hint.className = "scroll-hint muted";
      hint.textContent = "Wider than the window: scroll the table sideways for more columns →";
      box.before(hint);
    }
    hint.hidden = !more;
  }

  function keepChoiceInAddress() {
    // A page opened without ?labels= shows the dataset's default set: name it in the address.
    const form = document.querySelector("form[data-address-labels]");
    if (!form) return;
    const url = new URL(window.location.href);
    if (url.searchParams.has("labels")) return;
    url.searchParams.set("labels", form.dataset.addressLabels);
    window.history.replaceState(window.history.state, "", url);
  }

  document.addEventListener("DOMContentLoaded", function () {
    const boxes = document.querySelectorAll(".table-scroll");
    const markAll = () => boxes.forEach(markOverflow);
    boxes.forEach((box) => box.addEventListener("scroll", () => markOverflow(box), {passive: true}));
    window.addEventListener("resize", markAll);
    markAll();
    keepChoiceInAddress();
  });
})();
