// Draws the step view from the JSON in #data; no library, nothing fetched.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const steps = D.steps, B = D.config.token_budget, K = D.config.kv_tokens;
  const colour = {}, label = {};
  D.categories.forEach(function (c) { colour[c.key] = c.colour; label[c.key] = c.label; });
  const KINDS = D.kinds || ["decode", "chunk", "admission"];  // the paged design adds recompute
  const rids = D.requests.map(function (r) { return r.rid; });
  const byRid = {};
  D.requests.forEach(function (r) { byRid[r.rid] = r; });
  const LEFT = 90, CELL = Math.max(6, Math.min(34, Math.floor(900 / Math.max(steps.length, 1))));
  const ROW = rids.length > 40 ? 8 : 20, WIDTH = LEFT + CELL * steps.length;

  function el(name, attrs, parent, text) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function x(i) { return LEFT + i * CELL; }
  function names(list) { return list.length ? list.map(function (r) { return "r" + r; }).join(" ") : "-"; }

  function frame(svg, height) {
    svg.setAttribute("width", WIDTH + 40);
    svg.setAttribute("height", height + 24);
    svg.setAttribute("viewBox", "0 0 " + (WIDTH + 40) + " " + (height + 24));
    const band = el("rect", {class: "band", y: 0, width: CELL, height: height}, svg);
    D.broken.forEach(function (b) {
      const i = steps.findIndex(function (s) { return s.step === b.step; });
      if (i >= 0) el("line", {class: "broken", x1: x(i) + CELL / 2, x2: x(i) + CELL / 2, y1: 0, y2: height}, svg);
    });
    const every = Math.max(1, Math.ceil(steps.length / 30));
    steps.forEach(function (s, i) {
      if (i % every === 0) el("text", {x: x(i) + CELL / 2, y: height + 14, "text-anchor": "middle"}, svg, s.step);
    });
    return band;
  }

  function bars(svg, height, limit, limitName, value) {
    const band = frame(svg, height);
    const scale = height / (limit * 1.1);
    steps.forEach(function (s, i) {
      let y = height;
      value(s).forEach(function (part) {
        const h = part[1] * scale;
        y -= h;
        el("rect", {x: x(i) + 1, y: y, width: Math.max(CELL - 2, 1), height: h, fill: part[0]}, svg)
          .appendChild(el("title", {}, null, "step " + s.step + ": " + part[2]));
      });
    });
    const ly = height - limit * scale;
    el("line", {class: "limit", x1: LEFT, x2: WIDTH, y1: ly, y2: ly}, svg);
    el("text", {x: 0, y: ly + 4}, svg, limitName + " = " + limit);
    return band;
  }

  const bands = [];
  bands.push(bars(document.getElementById("tokens"), 120, B, "B", function (s) {
    return KINDS.map(function (k) { return [colour[k], s.tokens[k], s.tokens[k] + " " + k + " token(s)"]; });
  }));
  const gridSvg = document.getElementById("grid");
  const gh = ROW * rids.length;
  bands.push(frame(gridSvg, gh));
  rids.forEach(function (rid, y) {
    const r = byRid[rid];
    el("text", {x: 0, y: y * ROW + ROW * 0.7}, gridSvg, ROW >= 12 ? "r" + rid + " (" + r.prompt_len + "+" + r.max_new + ")" : "");
    D.grid[String(rid)].forEach(function (key, i) {
      if (key === null) return;
      el("rect", {x: x(i), y: y * ROW, width: CELL, height: ROW, fill: colour[key]}, gridSvg)
        .appendChild(el("title", {}, null, "r" + rid + ", step " + steps[i].step + ": " + label[key]));
      const cell = steps[i].cells.find(function (c) { return c.rid === rid; });
      if (cell && cell.n && CELL >= 14 && ROW >= 12)
        el("text", {class: "count", x: x(i) + CELL / 2, y: y * ROW + ROW * 0.7, "text-anchor": "middle"}, gridSvg, cell.n);
    });
  });
  bands.push(bars(document.getElementById("kv"), 80, K, "K", function (s) {
    return [["#9467bd", s.kv_in_use, s.kv_in_use + " KV tokens reserved"]];
  }));

  ["tokens", "grid", "kv"].forEach(function (id) {  // the broken-rule marks over the bars, not under
    const svg = document.getElementById(id);
    svg.querySelectorAll(".broken").forEach(function (line) { svg.appendChild(line); });
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
  slider.max = String(Math.max(steps.length - 1, 0));

  function row(table, name, value, cls) {
    const tr = document.createElement("tr");
    const th = document.createElement("th");
    const td = document.createElement("td");
    th.textContent = name;
    td.textContent = value;
    if (cls) td.className = cls;
    tr.appendChild(th); tr.appendChild(td); table.appendChild(tr);
  }

  function show(i) {
    i = Math.max(0, Math.min(steps.length - 1, i));
    slider.value = String(i);
    bands.forEach(function (b) { b.setAttribute("x", x(i)); });
    document.querySelectorAll(".chart").forEach(function (box) {  // keep the chosen step in view
      if (x(i) < box.scrollLeft || x(i) + CELL > box.scrollLeft + box.clientWidth)
        box.scrollLeft = Math.max(0, x(i) - box.clientWidth / 2);
    });
    const detail = document.getElementById("detail");
    detail.textContent = "";
    if (!steps.length) { detail.textContent = "no step ran"; return; }
    const s = steps[i];
    document.getElementById("label").textContent = "step " + s.step + " of " + steps[steps.length - 1].step;
    const h = document.createElement("h2");
    h.textContent = "step " + s.step;
    detail.appendChild(h);
    const table = document.createElement("table");
    row(table, "arrived", names(s.arrived));
    row(table, "entries", s.entries.map(function (e) { return e.text; }).join(", ") || "(empty)");
    row(table, "tokens", s.num_tokens + "/" + B + " (" + KINDS.map(function (k) { return s.tokens[k] + " " + k; }).join(", ") + ")");
    if (s.ms !== null) row(table, "ms", s.ms.toFixed(1) + " (cost model)");
    row(table, "emitted", s.completed ? names(s.emitted) : "(not run: the plan broke a rule)");
    row(table, "finished", names(s.finished));
    row(table, "KV in use", s.kv_in_use + " of " + K + (s.kv_after === null ? "" : "; free after the step: " + (K - s.kv_after)));
    const waits = s.cells.filter(function (c) { return c.why !== null; });
    row(table, "waiting", waits.map(function (c) { return "r" + c.rid + " " + c.why; }).join(", ") || "-");
    D.broken.filter(function (b) { return b.step === s.step; }).forEach(function (b) {
      row(table, b.rule, "broken here: " + b.message, "rule");
    });
    detail.appendChild(table);
    if (location.hash !== "#step=" + s.step) history.replaceState(null, "", "#step=" + s.step);
  }

  const boxes = Array.prototype.slice.call(document.querySelectorAll(".chart"));
  boxes.forEach(function (box) {  // the three charts share one step axis: they scroll together
    box.addEventListener("scroll", function () {
      boxes.forEach(function (other) { if (other !== box && other.scrollLeft !== box.scrollLeft) other.scrollLeft = box.scrollLeft; });
    });
  });
  slider.addEventListener("input", function () { show(Number(slider.value)); });
  document.getElementById("prev").addEventListener("click", function () { show(Number(slider.value) - 1); });
  document.getElementById("next").addEventListener("click", function () { show(Number(slider.value) + 1); });
  document.addEventListener("keydown", function (e) {
    // A focused slider moves itself on the arrow keys (and fires input): stepping here too moved two.
    if (e.target === slider || e.defaultPrevented) return;
    if (e.key === "ArrowLeft") show(Number(slider.value) - 1);
    if (e.key === "ArrowRight") show(Number(slider.value) + 1);
  });
  const m = /^#step=(\d+)$/.exec(location.hash);
  const start = m ? steps.findIndex(function (s) { return s.step === Number(m[1]); }) : 0;
  show(start < 0 ? 0 : start);
})();
