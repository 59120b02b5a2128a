// The console page: polls the JSON of /api/* and draws it. Charts are SVG polylines of
// the coordinator's per-second samples (the server keeps five minutes of them).
"use strict";

async function fetchJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (response.status === 401) {
    window.location = "/login";
    throw new Error("logged out");
  }
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function cell(row, text, className) {
  const td = document.createElement(row.parentElement && row.parentElement.tagName === "THEAD" ? "th" : "td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

// Fills `table` with `rows` (objects), one column per entry of `columns`:
// [key, heading, class].
function fill(table, columns, rows, empty) {
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  for (const [, heading] of columns) cell(head, heading);
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    for (const [key, , className] of columns) cell(tr, row[key], className);
  }
  if (rows.length === 0) cell(body.insertRow(), empty).colSpan = columns.length;
  table.dataset.rows = String(rows.length);
}

function draw(svg, values) {
  const width = 600, height = 160, pad = 6;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  const points = values.map((v, i) =>
    `${(i * step).toFixed(1)},${(height - pad - (v / max) * (height - 2 * pad)).toFixed(1)}`);
  svg.replaceChildren();
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points.join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#2f6fdb");
  line.setAttribute("stroke-width", "2");
  line.setAttribute("vector-effect", "non-scaling-stroke");
  svg.appendChild(line);
  const label = document.createElementNS("http://www.w3.org/2000/svg", "text");
  label.setAttribute("x", "4");
  label.setAttribute("y", "14");
  label.setAttribute("font-size", "11");
  label.textContent = `max ${max.toFixed(max < 10 ? 2 : 0)}`;
  svg.appendChild(label);
  svg.dataset.points = String(values.length);
  svg.dataset.max = String(Math.max(0, ...values));
}

async function overview() {
  const data = await fetchJson("/api/overview");
  document.getElementById("user").textContent = data.user;
  const samples = data.samples;
  draw(document.getElementById("tps-chart"), samples.map(s => s.tps));
  draw(document.getElementById("latency-chart"), samples.map(s => s.latency_ms));
  const last = samples[samples.length - 1];
  document.getElementById("tps-now").textContent = last ? last.tps.toFixed(0) : "";
  document.getElementById("latency-now").textContent = last ? last.latency_ms.toFixed(3) : "";
  fill(document.getElementById("nodes"),
    [["node_name", "node"], ["role", "role"], ["address", "address"], ["state", "state"]],
    data.nodes, "no nodes");
  for (const td of document.querySelectorAll("#nodes td:last-child")) {
    td.className = td.textContent.startsWith("up") ? "up" : "down";
  }
}

async function sessions() {
  const data = await fetchJson("/api/sessions");
  fill(document.getElementById("sessions"),
    [["pid", "pid"], ["usename", "role"], ["application_name", "application"],
     ["client_addr", "client"], ["state", "state"], ["wait_event", "waiting for"],
     ["xact_start", "transaction start"], ["query", "query", "query"]],
    data.rows, "no sessions");
}

async function waits() {
  const data = await fetchJson("/api/waits");
  fill(document.getElementById("waits"),
    [["pid", "pid"], ["usename", "role"], ["wait_event_type", "type"],
     ["wait_event", "waiting for"], ["waiting", "for"], ["query", "query", "query"]],
    data.rows, "nobody is waiting");
}

async function statements() {
  const data = await fetchJson("/api/statements");
  fill(document.getElementById("statements"),
    [["calls", "calls"], ["total_ms", "total ms"], ["mean_ms", "mean ms"],
     ["max_ms", "max ms"], ["rows", "rows"], ["query", "query", "query"]],
    data.rows, "no statements yet");
}

function every(ms, refresh) {
  const run = async () => {
    try {
      await refresh();
      document.getElementById("status").textContent = "";
    } catch (e) {
      document.getElementById("status").textContent = String(e.message || e);
    }
    setTimeout(run, ms);
  };
  run();
}

every(1000, overview);
every(2000, sessions);
every(2000, waits);
every(3000, statements);
