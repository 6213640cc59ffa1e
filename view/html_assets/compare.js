// Draws the policies side by side from the JSON in #data; no library, nothing fetched.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const colour = {}, label = {};
  D.categories.forEach(function (c) { colour[c.key] = c.colour; label[c.key] = c.label; });
  const N = Math.max.apply(null, D.runs.map(function (r) { return r.steps.length; }).concat([1]));
  const LEFT = 60, CELL = Math.max(6, Math.min(30, Math.floor(900 / N))), ROW = 16;
  const TICK_MS = 400;  // one step every 0.4 s while playing

  function el(name, attrs, parent, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function x(i) { return LEFT + i * CELL; }

  const bands = [], details = [];
  const box = document.getElementById("runs");
  D.runs.forEach(function (run) {
    const section = document.createElement("section");
    const h = document.createElement("h2");
    const broke = run.broken.map(function (b) { return b.rule + " at step " + b.step; }).join(", ");
    h.textContent = run.name + ": " + run.steps.length + " steps" + (broke ? "; breaks " + broke : "; breaks no rule");
    section.appendChild(h);
    const chart = document.createElement("div");
    chart.className = "chart";
    const svg = el("svg", {role: "img"}, chart);
    const height = ROW * run.rids.length;
    svg.setAttribute("width", x(N) + 40);
    svg.setAttribute("height", height + 20);
    bands.push(el("rect", {class: "band", y: 0, width: CELL, height: height}, svg));
    run.rids.forEach(function (rid, y) {
      el("text", {x: 0, y: y * ROW + ROW * 0.75}, svg, "r" + rid);
      run.grid[String(rid)].forEach(function (key, i) {
        if (key === null) return;
        el("rect", {x: x(i), y: y * ROW, width: CELL, height: ROW, fill: colour[key]}, svg)
          .appendChild(el("title", {}, null, run.name + ": r" + rid + ", step " + i + ": " + label[key]));
      });
    });
    const every = Math.max(1, Math.ceil(N / 30));
    for (let i = 0; i < N; i += every) el("text", {x: x(i) + CELL / 2, y: height + 14, "text-anchor": "middle"}, svg, i);
    section.appendChild(chart);
    const p = document.createElement("p");
    p.className = "entries";
    section.appendChild(p);
    details.push(p);
    box.appendChild(section);
  });

  const legend = document.getElementById("legend");
  D.categories.forEach(function (c) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.style.background = c.colour;
    li.appendChild(sw);
    li.appendChild(document.createTextNode(c.label));
    legend.appendChild(li);
  });

  const slider = document.getElementById("slider");
  slider.max = String(N - 1);
  const gaps = document.getElementById("gaps");

  function gapText(run, i) {
    if (!run.gaps.length) return "no step ran";
    const j = Math.min(i, run.gaps.length - 1);
    const steps = run.gaps[j] + " step(s)";
    return run.gaps_ms === null ? steps : steps + ", " + run.gaps_ms[j].toFixed(1) + " ms";
  }

  function show(i) {
    i = Math.max(0, Math.min(N - 1, i));
    slider.value = String(i);
    bands.forEach(function (b) { b.setAttribute("x", x(i)); });
    document.getElementById("label").textContent = "step " + i + " of " + (N - 1);
    gaps.textContent = "";
    D.runs.forEach(function (run, k) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      const td = document.createElement("td");
      th.textContent = run.name;
      td.textContent = gapText(run, i);
      tr.appendChild(th); tr.appendChild(td); gaps.appendChild(tr);
      const s = run.steps[i];
      details[k].textContent = s ? "step " + i + ": " + s.entries + " (" + s.tokens + "/" + s.budget + " tokens)"
                                 : "step " + i + ": the run had ended";
    });
    if (location.hash !== "#step=" + i) history.replaceState(null, "", "#step=" + i);
  }

  let timer = null;
  const play = document.getElementById("play");
  function stop() { if (timer !== null) { clearInterval(timer); timer = null; play.innerHTML = "&#9654; play"; } }
  play.addEventListener("click", function () {
    if (timer !== null) { stop(); return; }
    if (Number(slider.value) >= N - 1) show(0);
    play.innerHTML = "&#10074;&#10074; pause";
    timer = setInterval(function () {
      if (Number(slider.value) >= N - 1) { stop(); return; }
      show(Number(slider.value) + 1);
    }, TICK_MS);
  });
  slider.addEventListener("input", function () { stop(); show(Number(slider.value)); });
  document.getElementById("prev").addEventListener("click", function () { stop(); show(Number(slider.value) - 1); });
  document.getElementById("next").addEventListener("click", function () { stop(); show(Number(slider.value) + 1); });
  document.addEventListener("keydown", function (e) {
    // A focused slider moves itself on the arrow keys (and fires input): stepping here too moved two.
    if (e.target === slider || e.defaultPrevented) return;
    if (e.key === "ArrowLeft") { stop(); show(Number(slider.value) - 1); }
    if (e.key === "ArrowRight") { stop(); show(Number(slider.value) + 1); }
  });
  const m = /^#step=(\d+)$/.exec(location.hash);
  show(m ? Number(m[1]) : 0);
})();
