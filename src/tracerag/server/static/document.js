// The document view: bring the cited span to the middle of the screen and give it the focus, so that a reader (and
// a screen reader) lands on it; the #span fragment alone would put it at the very top, under nothing to read.
"use strict";

window.addEventListener("DOMContentLoaded", () => {
  const span = document.getElementById("span");
  if (!span) return;
  span.scrollIntoView({ block: "center" });
  span.focus({ preventScroll: true });
});
