(function () {
  "use strict";
  // The step slider of each run's image summaries. Without this script the page shows each
  // tag's last image (the others are hidden) and no slider. Images are data: URIs of checked
  // PNG/JPEG/GIF bytes already in the page; the slider only toggles which one is shown.
  var figures = document.querySelectorAll(".tz figure.img-series");
  Array.prototype.forEach.call(figures, function (figure) {
    var slider = figure.querySelector("input.img-slider");
    var images = figure.querySelectorAll(".frames img");
    var label = figure.querySelector(".img-step");
    if (!slider || images.length < 2) { return; }
    function show() {
      var k = Math.max(0, Math.min(images.length - 1, parseInt(slider.value, 10) || 0));
      Array.prototype.forEach.call(images, function (img, i) { img.hidden = i !== k; });
      if (label) { label.textContent = "step " + images[k].getAttribute("data-step"); }
      slider.setAttribute("aria-valuetext", "step " + images[k].getAttribute("data-step"));
    }
    slider.hidden = false;
    slider.addEventListener("input", show);
    show();
  });
})();
