"use strict";
// Placeholder until the page lands: shows the command and the process count.
(function () {
  const data = JSON.parse(document.getElementById("proctrace-data").textContent);
  if (data.format !== "proctrace-html") return;
  const h = document.createElement("h1");
  h.textContent = data.run.command === null ? "proctrace" : data.strings[data.run.command];
  document.getElementById("report").appendChild(h);
  const p = document.createElement("p");
  p.textContent = data.procs.length + " processes";
  document.getElementById("report").appendChild(p);
  document.body.dataset.ready = "1";
})();
