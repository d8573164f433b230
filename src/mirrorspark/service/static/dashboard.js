/*
 * mirrorspark replications dashboard.
 *
 * Polls the service's REST API (api/v1, relative to the page) every few seconds (?refresh=N
 * seconds, default 5) and draws: the replication graph (clusters as nodes, flows as arrows
 * coloured by state; A->B and B->A as two curved edges, A->B->C as a chain), the flows, per local
 * flow its charts (throughput, lag, latency over the chosen window), topics and consumer groups,
 * the disaster-recovery drills (per flow: the newest drill's recovery point and groups, and the
 * recovery point over the drills' history as sparklines and a table), the verification (per flow: the newest
 * verify run's verified and divergent records, its newest findings with their offsets, and the runs' history),
 * and the gap events. With mirrorspark.service.auth.token set (the health check says so) the page
 * asks for the token, keeps it in this tab's sessionStorage and sends it as a bearer token.
 * Charts: uPlot (static/vendor/, see README.md there). No build step, no CDN.
 */
(function () {
  "use strict";

  const API = "api/v1/";
  const TOKEN_KEY = "mirrorspark.service.token";
  const query = new URLSearchParams(window.location.search);
  const REFRESH_MS = Math.max(1, Number(query.get("refresh")) || 5) * 1000;
  const TIMEOUT_MS = 15000;
  const STATES = ["running", "standby", "failed", "stopped", "never started", "unknown"];
  const COLORS = {
    running: "#2e9d5b",
    standby: "#3b7dd8",
    failed: "#d64545",
    stopped: "#8a94a6",
    "never started": "#b8bfcc",
    unknown: "#d9a21b",
  };
  const NODE_W = 150;
  const NODE_H = 54;
  const COL_GAP = 330;
  const ROW_GAP = 120;
  const MARGIN = 40;
  const DRILLS = 500; // drills read per refresh (every flow's, newest first)
  const DRILL_ROWS = 10; // a flow's newest drills listed in its history table
  const VERIFY_RUNS = 500; // verify runs read per refresh (every flow's, newest first, without partitions)
  const VERIFY_ROWS = 10; // a flow's newest runs listed in its history table
  const FINDING_ROWS = 10; // the newest run's findings listed

  const ui = {
    window: "1m",
    selectedTopic: {}, // flow name -> topic whose charts are shown (absent: all topics)
    sections: {}, // flow name -> {root, charts, ...}
    busy: false,
    cluster: null,
  };

  class AuthError extends Error {}

  // ---------------------------------------------------------------- DOM helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, String(v));
    }
  }

  function append(node, children) {
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
  }

  function $(id) {
    return document.getElementById(id);
  }

  function stateClass(s) {
    return "state-" + String(s || "unknown").replace(/\s+/g, "-");
  }

  function badge(s) {
    return el("span", { class: "state " + stateClass(s), text: s || "unknown" });
  }

  // ---------------------------------------------------------------- formatting

  const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

  function fmtCount(n) {
    return n === null || n === undefined ? "—" : INT.format(Math.round(n));
  }

  function fmtRate(x) {
    if (x === null || x === undefined) return "—";
    if (x === 0) return "0";
    if (x < 1) return x.toFixed(2);
    if (x < 100) return x.toFixed(1);
    return INT.format(Math.round(x));
  }

  function fmtBytes(x) {
    if (x === null || x === undefined) return "—";
    const units = ["B", "KiB", "MiB", "GiB"];
    let i = 0;
    while (x >= 1024 && i < units.length - 1) {
      x /= 1024;
      i += 1;
    }
    return (i === 0 ? fmtRate(x) : x.toFixed(1)) + " " + units[i] + "/s";
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "—";
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
    if (ms < 3600000) return (ms / 60000).toFixed(1) + " min";
    return (ms / 3600000).toFixed(1) + " h";
  }

  function fmtTime(ms) {
    return ms === null || ms === undefined ? "—" : new Date(ms).toLocaleTimeString("en-GB");
  }

  function fmtDateTime(ms) {
    return ms === null || ms === undefined ? "—" : new Date(ms).toLocaleString("en-GB");
  }

  function plural(n, word) {
    return `${fmtCount(n)} ${word}${n === 1 ? "" : "s"}`;
  }

  function arrow(name) {
    return String(name).replace("->", " → ");
  }

  // ---------------------------------------------------------------- API

  function token() {
    return window.sessionStorage.getItem(TOKEN_KEY) || "";
  }

  async function api(path, params) {
    const url = new URL(API + path, window.location.href);
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== null && v !== undefined) url.searchParams.set(k, v);
    }
    const headers = { Accept: "application/json" };
    if (token()) headers.Authorization = "Bearer " + token();
    const abort = new AbortController();
    const timer = window.setTimeout(() => abort.abort(), TIMEOUT_MS);
    let response;
    try {
      response = await fetch(url, { headers, signal: abort.signal, cache: "no-store" });
    } finally {
      window.clearTimeout(timer);
    }
    if (response.status === 401) throw new AuthError("the bearer token was refused");
    if (!response.ok) {
      let detail = response.statusText;
      try {
        detail = (await response.json()).detail || detail;
      } catch (e) {
        /* not problem details */
      }
      throw new Error(`${url.pathname}: ${response.status} ${detail}`);
    }
    return response.json();
  }

  function flowPath(f) {
    return `replications/${encodeURIComponent(f.source)}/${encodeURIComponent(f.target)}/`;
  }

  async function flowDetail(f, w) {
    const base = flowPath(f);
    let topic = ui.selectedTopic[f.name] || null;
    const topics = await api(base + "topics", { window: w });
    if (topic && !topics.some((t) => t.topic === topic)) {
      delete ui.selectedTopic[f.name];
      topic = null;
    }
    const q = { window: w, topic };
    const [groups, rate, lag, p50, p99] = await Promise.all([
      api(base + "groups"),
      api(base + "metrics/record-count", { ...q, aggregate: "rate" }),
      api(base + "metrics/replication-lag-records", { ...q, aggregate: "last" }),
      api(base + "metrics/replication-latency-ms", { ...q, aggregate: "p50" }),
      api(base + "metrics/replication-latency-ms", { ...q, aggregate: "p99" }),
    ]);
    return { topics, groups, topic, series: { rate: [rate], lag: [lag], latency: [p50, p99] } };
  }

  // ---------------------------------------------------------------- refresh loop

  async function refresh() {
    if (ui.busy) return;
    ui.busy = true;
    try {
      const health = await api("health");
      renderHealth(health);
      if (health.token_required && !token()) {
        showTokenForm("This service requires a bearer token (mirrorspark.service.auth.token).");
        return;
      }
      const w = ui.window;
      const [clusters, flows, gaps, drills, runs] = await Promise.all([
        api("clusters"),
        api("replications", { window: w }),
        api("gaps"),
        api("drills", { limit: DRILLS, partitions: false }),
        api("verifications", { limit: VERIFY_RUNS, partitions: false }),
      ]);
      const local = flows.filter((f) => f.local);
      const [details, newestRuns] = await Promise.all([
        Promise.all(local.map((f) => flowDetail(f, w))),
        newestVerifications(runs),
      ]);
      hideTokenForm();
      renderGraph(clusters, flows);
      renderFlows(flows);
      renderDetails(local, details);
      renderDrills(drills);
      renderVerifications(runs, newestRuns);
      renderGaps(gaps);
      $("error").hidden = true;
      $("updated").textContent = `updated ${fmtTime(Date.now())} · every ${REFRESH_MS / 1000} s`;
    } catch (e) {
      if (e instanceof AuthError) {
        showTokenForm("The bearer token was refused: enter the service's token (mirrorspark.service.auth.token).");
      } else {
        const err = $("error");
        err.textContent = `The service does not answer (${e.message || e}); retrying every ${REFRESH_MS / 1000} s.`;
        err.hidden = false;
      }
    } finally {
      ui.busy = false;
    }
  }

  function showTokenForm(message) {
    $("token-message").textContent = message;
    $("token-form").hidden = false;
    $("forget").hidden = !token();
  }

  function hideTokenForm() {
    $("token-form").hidden = true;
    $("forget").hidden = !token();
  }

  // ---------------------------------------------------------------- header

  function renderHealth(h) {
    ui.cluster = h.cluster;
    $("cluster").textContent = h.cluster;
    document.title = `mirrorspark · replications into ${h.cluster}`;
    const pill = $("health");
    const problems = [h.aggregation_error, h.feed_error].filter(Boolean);
    pill.className = "pill " + h.status;
    pill.textContent = h.status === "ok" ? "service ok · Spark job active" : `degraded · Spark job ${h.aggregation}`;
    pill.title =
      (problems.length ? problems.join("; ") + "\n" : "") +
      `last micro-batch ${fmtTime(h.last_batch_ms)}, newest aggregate ${fmtTime(h.last_aggregate_ms)}, ` +
      `${fmtCount(h.records_read)} raw metrics read from ${h.topics_read} topics`;
  }

  // ---------------------------------------------------------------- graph

  function layout(clusters, flows) {
    const names = clusters.map((c) => c.alias);
    for (const f of flows) for (const n of [f.source, f.target]) if (!names.includes(n)) names.push(n);
    const out = {};
    const indeg = {};
    for (const f of flows) {
      (out[f.source] = out[f.source] || []).push(f.target);
      indeg[f.target] = (indeg[f.target] || 0) + 1;
    }
    // break cycles (active/active) with a depth-first search from the clusters nothing flows into
    const seen = {};
    const back = new Set();
    const visit = (n) => {
      seen[n] = 1;
      for (const t of out[n] || []) {
        if (seen[t] === 1) back.add(n + "->" + t);
        else if (!seen[t]) visit(t);
      }
      seen[n] = 2;
    };
    names.filter((n) => !indeg[n]).forEach((n) => seen[n] || visit(n));
    names.forEach((n) => seen[n] || visit(n));
    // longest path from the sources: a multi-hop flow A->B->C is a chain left to right
    const layer = Object.fromEntries(names.map((n) => [n, 0]));
    for (let i = 0; i < names.length; i += 1) {
      for (const f of flows) {
        if (!back.has(f.source + "->" + f.target) && f.source !== f.target) {
          layer[f.target] = Math.max(layer[f.target], layer[f.source] + 1);
        }
      }
    }
    const columns = [];
    for (const n of names) (columns[layer[n]] = columns[layer[n]] || []).push(n);
    const rows = Math.max(1, ...columns.map((c) => (c ? c.length : 0)));
    const pos = {};
    columns.forEach((col, x) => {
      (col || []).forEach((n, i) => {
        const offset = ((rows - col.length) * ROW_GAP) / 2;
        pos[n] = { x: MARGIN + NODE_W / 2 + x * COL_GAP, y: MARGIN + NODE_H / 2 + 24 + offset + i * ROW_GAP };
      });
    });
    const width = MARGIN * 2 + NODE_W + Math.max(0, columns.length - 1) * COL_GAP;
    const height = MARGIN * 2 + NODE_H + 48 + (rows - 1) * ROW_GAP;
    return { names, pos, width, height };
  }

  function border(c, toward) {
    // where the ray from a node's centre toward a point leaves its box
    const dx = toward.x - c.x;
    const dy = toward.y - c.y;
    const hw = NODE_W / 2 + 3;
    const hh = NODE_H / 2 + 3;
    const t = Math.min(dx ? hw / Math.abs(dx) : Infinity, dy ? hh / Math.abs(dy) : Infinity);
    return { x: c.x + dx * t, y: c.y + dy * t };
  }

  function renderGraph(clusters, flows) {
    const box = $("graph");
    const { names, pos, width, height } = layout(clusters, flows);
    const byAlias = Object.fromEntries(clusters.map((c) => [c.alias, c]));
    const names2 = new Set(flows.map((f) => f.source + "->" + f.target));
    const root = svg("svg", {
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: "img",
      "aria-label": "replication graph",
    });
    const defs = svg("defs");
    for (const s of STATES) {
      defs.appendChild(
        svg(
          "marker",
          {
            id: "arrow-" + stateClass(s),
            viewBox: "0 0 10 10",
            refX: 9,
            refY: 5,
            markerWidth: 13,
            markerHeight: 13,
            markerUnits: "userSpaceOnUse",
            orient: "auto",
          },
          svg("path", { d: "M0,0 L10,5 L0,10 z", fill: COLORS[s] })
        )
      );
    }
    root.appendChild(defs);
    if (!names.length) {
      root.appendChild(svg("text", { x: 20, y: 40, class: "empty", text: "No cluster known yet." }));
    }
    for (const f of flows) {
      const a = pos[f.source];
      const b = pos[f.target];
      if (!a || !b || f.source === f.target) continue;
      const dx = b.x - a.x;
      const dy = b.y - a.y;
      const len = Math.hypot(dx, dy) || 1;
      const nx = dy / len;
      const ny = -dx / len; // the left of the direction: A->B and B->A bend to opposite sides
      const twoWay = names2.has(f.target + "->" + f.source);
      const skip = Math.abs(dy) < 1 && Math.abs(dx) > COL_GAP * 1.5;
      const bend = twoWay ? 42 : skip ? 70 : 0;
      const mid = { x: (a.x + b.x) / 2 + nx * bend, y: (a.y + b.y) / 2 + ny * bend };
      const ctrl = { x: (a.x + b.x) / 2 + nx * bend * 2, y: (a.y + b.y) / 2 + ny * bend * 2 };
      const p0 = border(a, bend ? ctrl : b);
      const p1 = border(b, bend ? ctrl : a);
      const d = bend
        ? `M${p0.x.toFixed(1)},${p0.y.toFixed(1)} Q${ctrl.x.toFixed(1)},${ctrl.y.toFixed(1)} ${p1.x.toFixed(1)},${p1.y.toFixed(1)}`
        : `M${p0.x.toFixed(1)},${p0.y.toFixed(1)} L${p1.x.toFixed(1)},${p1.y.toFixed(1)}`;
      const state = STATES.includes(f.state) ? f.state : "unknown";
      const fig = f.figures || {};
      const detail = f.local
        ? `${fmtRate(fig.record_rate_per_s)} rec/s · lag ${fmtCount(fig.lag_records)}`
        : "seen through heartbeats";
      // labels sit beside the edge, on the side it bends to (above a straight one)
      const up = bend ? ny <= 0 : true;
      const lx = mid.x + nx * (bend ? 10 : 0);
      const ly = mid.y + (bend ? ny * 10 : 0) + (up ? -24 : 16);
      root.appendChild(
        svg(
          "g",
          {
            class: `edge ${stateClass(state)}${f.local ? "" : " remote"}`,
            "data-flow": f.name,
            "data-state": state,
          },
          svg("title", { text: `${arrow(f.name)}: ${state}${f.error ? " (" + f.error + ")" : ""}` }),
          svg("path", { d, stroke: COLORS[state], "marker-end": `url(#arrow-${stateClass(state)})` }),
          svg("text", { x: lx, y: ly, "text-anchor": "middle", "font-weight": 600, text: state }),
          svg("text", { x: lx, y: ly + 14, "text-anchor": "middle", text: detail })
        )
      );
    }
    for (const n of names) {
      const c = byAlias[n] || { alias: n, served: false, in_config: false };
      const p = pos[n];
      const role = c.served ? "served here" : c.in_config ? "configured" : "seen in heartbeats";
      root.appendChild(
        svg(
          "g",
          { class: "node" + (c.served ? " served" : ""), "data-cluster": n },
          svg("title", { text: `cluster ${n}: ${role}` }),
          svg("rect", { x: p.x - NODE_W / 2, y: p.y - NODE_H / 2, width: NODE_W, height: NODE_H, rx: 10 }),
          svg("text", { class: "alias", x: p.x, y: p.y - 2, "text-anchor": "middle", text: n }),
          svg("text", { class: "role", x: p.x, y: p.y + 15, "text-anchor": "middle", text: role })
        )
      );
    }
    box.replaceChildren(root);
    const legend = $("legend");
    if (!legend.childElementCount) {
      for (const s of STATES) {
        legend.appendChild(el("span", {}, el("span", { class: "swatch", style: `background:${COLORS[s]}` }), s));
      }
      legend.appendChild(el("span", {}, el("span", { class: "swatch dashed" }), "flow into another cluster"));
    }
  }

  // ---------------------------------------------------------------- tables

  function td(text, cls, col) {
    return el("td", { class: cls, "data-col": col, text });
  }

  function fill(tbody, rows, empty, span) {
    tbody.replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", { class: "empty", colspan: span, text: empty }))]));
  }

  function renderFlows(flows) {
    const rows = flows.map((f) => {
      const g = f.figures || {};
      return el(
        "tr",
        { "data-flow": f.name },
        td(arrow(f.name) + (f.local ? "" : " (upstream)"), null, "flow"),
        td(f.engine, null, "engine"),
        el("td", { "data-col": "state", title: f.error || "" }, badge(f.state)),
        td(fmtCount(f.tasks), "num", "tasks"),
        td(f.local ? fmtCount(f.topics) : "—", "num", "topics"),
        td(f.local ? fmtCount(f.partitions) : "—", "num", "partitions"),
        td(fmtRate(g.record_rate_per_s), "num", "records-per-s"),
        td(fmtCount(g.lag_records), "num", "lag"),
        td(fmtMs(g.lag_ms), "num", "lag-ms"),
        td(fmtMs(g.latency_p99_ms), "num", "latency-p99"),
        td(f.heartbeat_age_s === null ? "—" : fmtMs(f.heartbeat_age_s * 1000), "num", "heartbeat-age"),
        td(f.local ? fmtCount(f.gaps) : "—", "num" + (f.gaps ? " bad" : ""), "gaps")
      );
    });
    const where = ui.cluster ? ` into ${ui.cluster}` : "";
    fill(
      $("flows").querySelector("tbody"),
      rows,
      `No replication flow${where} seen yet: a flow shows up with its first heartbeat or metrics record.`,
      12
    );
  }

  const TOPIC_COLUMNS = ["Partitions", "Records copied", "Dropped", "Records/s", "Bytes/s", "Lag", "Lag (time)", "Latency p50", "p99", "max"];

  function grid(cls, textHeads, numHeads, rows, empty) {
    // a table: text columns first, then right-aligned figures
    const heads = [
      ...textHeads.map((h) => el("th", { text: h })),
      ...numHeads.map((h) => el("th", { class: "num", text: h })),
    ];
    const table = el("table", { class: cls }, el("thead", {}, el("tr", {}, heads)), el("tbody"));
    fill(table.querySelector("tbody"), rows, empty, heads.length);
    return table;
  }

  function topicsTable(f, topics, selected) {
    const rows = topics.map((t) => {
      const g = t.figures;
      return el(
        "tr",
        {
          class: t.topic === selected ? "selected" : null,
          "data-topic": t.topic,
          title: "Show this topic's charts (click again for all topics)",
          onclick: () => {
            if (ui.selectedTopic[f.name] === t.topic) delete ui.selectedTopic[f.name];
            else ui.selectedTopic[f.name] = t.topic;
            refresh();
          },
        },
        td(t.topic, null, "topic"),
        td(t.remote_topic || "—", null, "remote-topic"),
        td(fmtCount(t.partitions), "num", "partitions"),
        td(fmtCount(g.records_copied), "num", "records-copied"),
        td(fmtCount(g.records_dropped), "num", "records-dropped"),
        td(fmtRate(g.record_rate_per_s), "num", "records-per-s"),
        td(fmtBytes(g.byte_rate_per_s), "num", "bytes-per-s"),
        td(fmtCount(g.lag_records), "num", "lag"),
        td(fmtMs(g.lag_ms), "num", "lag-ms"),
        td(fmtMs(g.latency_p50_ms), "num", "latency-p50"),
        td(fmtMs(g.latency_p99_ms), "num", "latency-p99"),
        td(fmtMs(g.latency_max_ms), "num", "latency-max")
      );
    });
    return grid("grid topics", ["Topic", "Remote topic"], TOPIC_COLUMNS, rows, "No topic replicated yet.");
  }

  function groupsTable(groups) {
    const rows = groups.map((g) =>
      el(
        "tr",
        { "data-group": g.group },
        td(g.group, null, "group"),
        td(fmtCount(g.partitions.length), "num", "partitions"),
        td(fmtCount(g.checkpoint_lag_records), "num", "checkpoint-lag"),
        td(fmtCount(g.failover_rereads), "num", "failover-rereads"),
        td(fmtMs(g.checkpoint_latency_ms), "num", "checkpoint-latency"),
        td(fmtTime(g.updated_ms), "num", "updated")
      )
    );
    return grid(
      "grid",
      ["Consumer group"],
      ["Partitions", "Checkpoint lag", "Failover re-reads", "Checkpoint latency", "Reported"],
      rows,
      "No consumer group checkpointed (the flow's groups setting)."
    );
  }

  function renderGaps(gaps) {
    const rows = gaps
      .slice(-50)
      .reverse()
      .map((g) =>
        el(
          "tr",
          {},
          td(fmtDateTime(g.at_ms), null, "at"),
          td(arrow(g.flow), null, "flow"),
          td(g.topic, null, "topic"),
          td(String(g.partition), "num", "partition"),
          td(g.reason, null, "reason"),
          td(g.first_lost === null ? "—" : `${fmtCount(g.first_lost)} … ${fmtCount(g.last_lost)}`, "num", "offsets"),
          td(fmtCount(g.lost_records), "num bad", "lost")
        )
      );
    fill($("gaps").querySelector("tbody"), rows, "No gap event: no source record was lost before it was copied.", 7);
  }

  // ---------------------------------------------------------------- disaster-recovery drills

  function fmtSeconds(s) {
    return s === null || s === undefined ? "unknown" : fmtMs(s * 1000);
  }

  function sparkline(key, label, points, fmt, color) {
    // points: [[at_ms, value]] oldest first; a value of null (unknown) is left out
    const W = 240;
    const H = 48;
    const P = 5;
    const known = points.filter(([, v]) => v !== null && v !== undefined);
    const attrs = { class: "spark", "data-series": key, width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" };
    if (!known.length) {
      return svg("svg", { ...attrs, "aria-label": `${label}: unknown` }, svg("title", { text: `${label}: unknown` }));
    }
    const t0 = known[0][0];
    const t1 = known[known.length - 1][0];
    const top = Math.max(...known.map(([, v]) => v)) || 1;
    const xy = known.map(([t, v]) => [
      t1 > t0 ? P + ((t - t0) / (t1 - t0)) * (W - 2 * P) : W / 2,
      H - P - (v / top) * (H - 2 * P),
    ]);
    const last = known[known.length - 1][1];
    const text = `${label}: ${fmt(last)} now, at most ${fmt(top)} over ${known.length} drill${known.length === 1 ? "" : "s"}`;
    const [lx, ly] = xy[xy.length - 1];
    return svg(
      "svg",
      { ...attrs, "aria-label": text },
      svg("title", { text }),
      svg("polyline", { points: xy.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" "), stroke: color }),
      svg("circle", { cx: lx.toFixed(1), cy: ly.toFixed(1), r: 3, fill: color })
    );
  }

  function figureBox(col, value, label, bad) {
    return el(
      "div",
      { class: "figure", "data-col": col },
      el("span", { class: "value" + (bad ? " bad" : ""), text: value }),
      el("span", { class: "label", text: label })
    );
  }

  function drillHistory(list) {
    const rows = list.slice(0, DRILL_ROWS).map((d) =>
      el(
        "tr",
        { "data-at": d.at_ms },
        td(fmtDateTime(d.at_ms), null, "at"),
        td(d.executed ? "executed" : "predicted", null, "mode"),
        td(fmtCount(d.recovery_point.records), "num", "rp-records"),
        td(fmtSeconds(d.recovery_point.seconds), "num", "rp-seconds"),
        td(fmtCount(d.rereads), "num", "rereads"),
        td(fmtCount(d.skips), "num" + (d.skips ? " bad" : ""), "skips"),
        td(fmtMs(d.duration_ms), "num", "duration")
      )
    );
    return grid(
      "grid drill-history",
      ["Drill", "Mode"],
      ["Recovery point", "Oldest waiting", "Re-reads", "Skips", "Took"],
      rows,
      "No drill."
    );
  }

  function drillGroups(d) {
    const rows = d.groups.map((g) => {
      const skipped = (g.skips || 0) + (g.measured_skips || 0);
      const unchecked = g.without_checkpoint || [];
      const outcome = g.refused
        ? "refused"
        : skipped
          ? "skips records"
          : unchecked.length
            ? `${plural(unchecked.length, "partition")} without checkpoint`
            : "ok";
      const why = [g.refused, unchecked.length ? "no checkpoint on the target: " + unchecked.join(", ") : null];
      return el(
        "tr",
        { "data-drill-group": g.group, title: why.filter(Boolean).join("\n") },
        td(g.group, null, "group"),
        td(fmtCount(g.partitions), "num", "partitions"),
        td(fmtCount(g.rereads), "num", "rereads"),
        td(fmtCount(g.measured_rereads), "num", "measured-rereads"),
        td(fmtCount(g.skips), "num" + (g.skips ? " bad" : ""), "skips"),
        td(fmtCount(g.measured_skips), "num" + (g.measured_skips ? " bad" : ""), "measured-skips"),
        td(fmtMs(g.recovery_ms), "num", "recovery-ms"),
        td(fmtCount(g.records_read), "num", "records-read"),
        td(fmtCount(g.target_members), "num" + (g.target_members ? " bad" : ""), "target-members"),
        td(outcome, outcome === "ok" ? "good" : "bad", "outcome")
      );
    });
    return grid(
      "grid drill-groups",
      ["Consumer group"],
      [
        "Partitions",
        "Re-reads (predicted)",
        "Re-reads (measured)",
        "Skips (predicted)",
        "Skips (measured)",
        "Recovery",
        "Records read",
        "Members on target",
        "Outcome",
      ],
      rows,
      "No consumer group with checkpoints was drilled."
    );
  }

  function renderDrills(drills) {
    const box = $("drills");
    const byFlow = new Map();
    for (const d of drills) {
      if (!byFlow.has(d.flow)) byFlow.set(d.flow, []);
      byFlow.get(d.flow).push(d); // newest first
    }
    if (!byFlow.size) {
      box.replaceChildren(
        el("p", {
          class: "empty",
          id: "drills-empty",
          text:
            "No drill recorded yet: each run of `mirrorspark drill` writes its result to mm2-drills.<source>.internal " +
            "on the target, and it shows up here.",
        })
      );
      return;
    }
    const sections = [...byFlow.keys()].sort().map((name) => {
      const list = byFlow.get(name);
      const d = list[0];
      const rp = d.recovery_point;
      const history = list.slice().reverse();
      const policy = d.policy
        ? `policy ${d.policy.policy}: ${d.policy.action}${d.policy.breached ? " (source failed)" : ""}`
        : "no failover policy";
      const meta = [
        `newest drill ${fmtDateTime(d.at_ms)}`,
        d.executed ? "executed (measured on shadow groups)" : "predicted",
        `took ${fmtMs(d.duration_ms)}`,
        policy,
      ];
      return el(
        "div",
        { class: "drill-flow", "data-flow": name, "data-at": d.at_ms },
        el(
          "div",
          { class: "flow-head" },
          el("h3", { text: arrow(name) }),
          el("span", { class: "meta", text: meta.join(" · "), title: d.policy ? d.policy.reason : "" })
        ),
        el(
          "div",
          { class: "drill-figures" },
          figureBox("rp-records", fmtCount(rp.records), "records not yet on the target", rp.records > 0),
          figureBox("rp-seconds", fmtSeconds(rp.seconds), "oldest of them", rp.seconds === null || rp.seconds > 0),
          figureBox("rp-max-records", fmtCount(rp.max_records), "largest partition's"),
          figureBox("gap-records", fmtCount(rp.gap_records), `lost in ${plural(rp.gap_events, "gap event")}`, rp.gap_records > 0),
          figureBox("rereads", fmtCount(d.rereads), "failover re-reads (predicted)"),
          figureBox("skips", fmtCount(d.skips), "failover skips (predicted)", !!d.skips)
        ),
        el(
          "div",
          { class: "sparks" },
          el(
            "div",
            { class: "spark-box" },
            "Recovery point (records) over the drills",
            sparkline("rp-records", "recovery point (records)", history.map((x) => [x.at_ms, x.recovery_point.records]), fmtCount, "#d9822b")
          ),
          el(
            "div",
            { class: "spark-box" },
            "Oldest waiting record over the drills",
            sparkline("rp-seconds", "recovery point (time)", history.map((x) => [x.at_ms, x.recovery_point.seconds]), fmtSeconds, "#8e44ad")
          ),
          el("span", { class: "muted", text: `${plural(list.length, "drill")} since ${fmtDateTime(history[0].at_ms)}` })
        ),
        el("h3", { text: "Newest drill's consumer groups" }),
        drillGroups(d),
        el("h3", { text: "Drills" }),
        drillHistory(list)
      );
    });
    box.replaceChildren(...sections);
  }

  // ---------------------------------------------------------------- verification (mirrorspark verify)

  async function newestVerifications(runs) {
    // the newest run of each flow, with its partitions and findings: {flow name: run}
    const flows = new Map();
    for (const r of runs) if (!flows.has(r.flow)) flows.set(r.flow, r);
    const newest = await Promise.all(
      [...flows.values()].map((r) => {
        const base = flowPath(r);
        return api(base + "verifications", { limit: 1 });
      })
    );
    return Object.fromEntries(newest.filter((list) => list.length).map((list) => [list[0].flow, list[0]]));
  }

  const TRIGGERS = { command: "mirrorspark verify", sampling: "run's sampling" };

  function fmtWindow(w) {
    const parts = [];
    if (w.since_ms !== null) parts.push(`since ${fmtDateTime(w.since_ms)}`);
    if (w.last !== null) parts.push(`last ${plural(w.last, "record")} per partition`);
    if (w.topics !== null) parts.push(`topics ${w.topics}`);
    return parts.length ? parts.join(", ") : "every copied range";
  }

  function findingsTable(run) {
    const rows = [];
    for (const p of run.partitions || []) {
      for (const f of p.findings) rows.push({ p, f });
    }
    const listed = rows.slice(0, FINDING_ROWS).map(({ p, f }) => {
      const related = f.related_offset !== null ? `related offset ${fmtCount(f.related_offset)}` : "";
      const detail = f.field ? `field ${f.field}` : related;
      return el(
        "tr",
        { "data-kind": f.kind },
        td(f.kind.replace(/_/g, " "), "bad", "kind"),
        td(`${p.topic}-${p.partition}`, null, "partition"),
        td(p.target_topic, null, "target-topic"),
        td(detail, null, "detail"),
        td(fmtCount(f.source_offset), "num", "source-offset"),
        td(fmtCount(f.target_offset), "num", "target-offset")
      );
    });
    const total = run.divergent;
    const more = total > listed.length ? ` (${fmtCount(listed.length)} of ${fmtCount(total)} listed)` : "";
    return [
      el("h3", { text: `Newest run's findings${more}` }),
      grid(
        "grid verify-findings",
        ["Kind", "Partition", "Target topic", "Detail"],
        ["Source offset", "Target offset"],
        listed,
        "No finding: every compared record is on the target, equal and in order."
      ),
    ];
  }

  function verifyHistory(list) {
    const rows = list.slice(0, VERIFY_ROWS).map((r) =>
      el(
        "tr",
        { "data-at": r.at_ms },
        td(fmtDateTime(r.at_ms), null, "at"),
        td(TRIGGERS[r.trigger] || r.trigger, null, "trigger"),
        td(fmtCount(r.verified), "num", "verified"),
        td(fmtCount(r.divergent), "num" + (r.divergent ? " bad" : ""), "divergent"),
        td(fmtCount(r.unverified_offsets), "num", "unverified"),
        td(fmtCount(r.gap_offsets), "num", "gap-offsets"),
        td(fmtMs(r.duration_ms), "num", "duration")
      )
    );
    return grid(
      "grid verify-history",
      ["Run", "By"],
      ["Verified", "Divergent", "Not verified yet", "In gaps", "Took"],
      rows,
      "No verify run."
    );
  }

  function renderVerifications(runs, newest) {
    const box = $("verifications");
    const byFlow = new Map();
    for (const r of runs) {
      if (!byFlow.has(r.flow)) byFlow.set(r.flow, []);
      byFlow.get(r.flow).push(r); // newest first
    }
    if (!byFlow.size) {
      box.replaceChildren(
        el("p", {
          class: "empty",
          id: "verifications-empty",
          text:
            "No verify run recorded yet: each run of `mirrorspark verify` (and of run's continuous sampling) writes " +
            "its report to mm2-verify.<source>.internal on the target, and it shows up here.",
        })
      );
      return;
    }
    const sections = [...byFlow.keys()].sort().map((name) => {
      const list = byFlow.get(name);
      const r = newest[name] && newest[name].at_ms >= list[0].at_ms ? newest[name] : list[0];
      const k = r.findings_by_kind;
      const kinds = Object.entries(k)
        .filter(([, n]) => n)
        .map(([kind, n]) => `${kind.replace(/_/g, " ")} ${fmtCount(n)}`)
        .join(", ");
      const meta = [
        `newest run ${fmtDateTime(r.at_ms)}`,
        `by ${TRIGGERS[r.trigger] || r.trigger}`,
        fmtWindow(r.window),
        `took ${fmtMs(r.duration_ms)}`,
      ];
      return el(
        "div",
        { class: "verify-flow", "data-flow": name, "data-at": r.at_ms, "data-clean": String(r.clean) },
        el(
          "div",
          { class: "flow-head" },
          el("h3", { text: arrow(name) }),
          el("span", { class: "meta", text: meta.join(" · ") })
        ),
        el(
          "div",
          { class: "drill-figures" },
          figureBox("last-run", fmtDateTime(r.at_ms), "last run"),
          figureBox("trigger", r.trigger, TRIGGERS[r.trigger] ? `by ${TRIGGERS[r.trigger]}` : "trigger"),
          figureBox("verified", fmtCount(r.verified), "records verified equal"),
          figureBox("divergent", fmtCount(r.divergent), kinds ? `divergent records: ${kinds}` : "divergent records", r.divergent > 0),
          figureBox("unverified", fmtCount(r.unverified_offsets), "offsets not verified yet (in flight)"),
          figureBox("gap-offsets", fmtCount(r.gap_offsets), "offsets in gaps (lost before copied)")
        ),
        r.partitions ? findingsTable(r) : null,
        el("h3", { text: "Verify runs" }),
        verifyHistory(list),
        el("span", { class: "muted", text: `${plural(list.length, "run")} since ${fmtDateTime(list[list.length - 1].at_ms)}` })
      );
    });
    box.replaceChildren(...sections);
  }

  // ---------------------------------------------------------------- per-flow sections and charts

  const CHARTS = [
    { key: "rate", title: "Throughput", unit: "records/s", fmt: fmtRate, lines: [["records/s", "#2f6fde"]] },
    { key: "lag", title: "Lag", unit: "records", fmt: fmtCount, whole: true, lines: [["lag", "#d9822b"]] },
    {
      key: "latency",
      title: "Latency",
      unit: "ms",
      fmt: fmtMs,
      lines: [
        ["p50", "#2e9d5b"],
        ["p99", "#8e44ad"],
      ],
    },
  ];

  function chartWidth(box) {
    return Math.max(220, box.clientWidth - 18);
  }

  function chartData(seriesList) {
    const xs = new Set();
    for (const s of seriesList) for (const p of s.points) xs.add(p.end_ms);
    const sorted = [...xs].sort((a, b) => a - b);
    const data = [sorted.map((x) => x / 1000)];
    for (const s of seriesList) {
      const by = new Map(s.points.map((p) => [p.end_ms, p.value]));
      data.push(sorted.map((x) => (by.has(x) ? by.get(x) : null)));
    }
    return data;
  }

  // Tick steps of a chart of whole numbers (records): 1, 2, 5, 10, 20, 50 ... never 0.5 shown as "1".
  const WHOLE_INCRS = [];
  for (let p = 1; p <= 1e12; p *= 10) WHOLE_INCRS.push(p, 2 * p, 5 * p);

  function makeChart(spec, box, data) {
    const axis = { stroke: "#6b7385", grid: { stroke: "#eef1f5", width: 1 }, ticks: { stroke: "#e3e7ee", width: 1 } };
    const opts = {
      width: chartWidth(box),
      height: 170,
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
      scales: {
        x: { time: true },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] },
      },
      axes: [
        axis,
        { ...axis, size: 64, ...(spec.whole ? { incrs: WHOLE_INCRS } : {}), values: (u, vals) => vals.map((v) => spec.fmt(v)) },
      ],
      series: [
        { value: (u, v) => (v === null ? "—" : fmtTime(v * 1000)) },
        ...spec.lines.map(([label, color]) => ({
          label,
          stroke: color,
          width: 2,
          fill: spec.lines.length === 1 ? color + "22" : undefined,
          spanGaps: true,
          value: (u, v) => (v === null || v === undefined ? "—" : spec.fmt(v)),
        })),
      ],
    };
    return new window.uPlot(opts, data, box);
  }

  function flowSection(f) {
    let s = ui.sections[f.name];
    if (s) return s;
    const head = el("div", { class: "flow-head" });
    const charts = el("div", { class: "charts" });
    const boxes = {};
    for (const spec of CHARTS) {
      const title = el("div", { class: "title" });
      const plot = el("div", { class: "plot" });
      const none = el("div", { class: "nodata", text: "No samples in this window yet.", hidden: true });
      charts.appendChild(el("div", { class: "chart", "data-chart": spec.key }, title, plot, none));
      boxes[spec.key] = { title, plot, none, chart: null };
    }
    const topics = el("div");
    const groups = el("div");
    const schemas = el("div", { class: "schemas", hidden: true });
    const root = el(
      "section",
      { class: "card flow", "data-flow": f.name },
      head,
      el("h3", { text: "Over the window" }),
      charts,
      schemas,
      el("h3", { text: "Topics" }),
      topics,
      el("h3", { text: "Consumer groups" }),
      groups
    );
    s = { root, head, boxes, topics, groups, schemas };
    ui.sections[f.name] = s;
    return s;
  }

  function renderSchemas(box, sc) {
    // a flow's schema replication (Schema Registry): shown only for a flow that replicates schemas
    box.hidden = !sc;
    if (!sc) return;
    const ratio = sc.id_cache_hit_ratio === null ? "—" : `${(sc.id_cache_hit_ratio * 100).toFixed(1)} %`;
    const figures = el(
      "div",
      { class: "drill-figures" },
      figureBox("subjects-synced", fmtCount(sc.subjects_synced), "subjects synced"),
      figureBox("versions-synced", fmtCount(sc.versions_synced), "versions synced"),
      figureBox("ids-translated", fmtCount(sc.ids_translated), "schema ids translated"),
      figureBox("id-cache-hit-ratio", ratio, "id cache hit ratio"),
      figureBox("id-cache-misses", fmtCount(sc.id_cache_misses), "id cache misses"),
      figureBox("unknown-ids", fmtCount(sc.unknown_ids), "unknown ids (copied unchanged)", !!sc.unknown_ids),
      figureBox("last-sync", fmtTime(sc.last_sync_ms), "last sync")
    );
    const parts = [el("h3", { text: "Schemas" }), figures];
    if (sc.sync_error) parts.push(el("div", { class: "meta bad", "data-col": "sync-error", text: `last sync failed: ${sc.sync_error}` }));
    box.replaceChildren(...parts);
  }

  function renderDetails(local, details) {
    const container = $("flow-details");
    const keep = new Set(local.map((f) => f.name));
    for (const [name, s] of Object.entries(ui.sections)) {
      if (!keep.has(name)) {
        Object.values(s.boxes).forEach((b) => b.chart && b.chart.destroy());
        s.root.remove();
        delete ui.sections[name];
      }
    }
    local.forEach((f, i) => {
      const s = flowSection(f);
      const d = details[i];
      if (s.root.parentNode !== container) container.appendChild(s.root);
      const meta = [
        f.engine,
        f.tasks === null ? null : `${f.tasks} task${f.tasks === 1 ? "" : "s"}`,
        f.task_restarts ? `${f.task_restarts} restarts` : null,
        f.heartbeat_age_s === null ? "no heartbeat yet" : `heartbeat ${fmtMs(f.heartbeat_age_s * 1000)} ago`,
        plural(f.topics, "topic") + ", " + plural(f.partitions, "partition"),
      ].filter(Boolean);
      const head = [el("h2", { text: arrow(f.name) }), badge(f.state), el("span", { class: "meta", text: meta.join(" · ") })];
      if (f.error) head.push(el("span", { class: "meta bad", text: f.error }));
      s.head.replaceChildren(...head);
      const scope = d.topic ? `topic ${d.topic}` : "all topics";
      for (const spec of CHARTS) {
        const b = s.boxes[spec.key];
        const data = chartData(d.series[spec.key]);
        b.title.replaceChildren(
          `${spec.title} `,
          el("span", { class: "muted", text: `· ${spec.unit} · ${scope} · ${ui.window} windows` })
        );
        const empty = data[0].length === 0;
        b.none.hidden = !empty;
        b.plot.hidden = empty;
        if (empty) continue;
        if (b.chart) b.chart.setData(data);
        else b.chart = makeChart(spec, b.plot, data);
      }
      renderSchemas(s.schemas, f.schemas);
      s.topics.replaceChildren(topicsTable(f, d.topics, d.topic));
      s.groups.replaceChildren(groupsTable(d.groups));
    });
  }

  function resizeCharts() {
    for (const s of Object.values(ui.sections)) {
      for (const b of Object.values(s.boxes)) {
        if (b.chart) b.chart.setSize({ width: chartWidth(b.plot), height: 170 });
      }
    }
  }

  // ---------------------------------------------------------------- start

  function start() {
    $("window").addEventListener("change", (e) => {
      ui.window = e.target.value;
      refresh();
    });
    $("token-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const value = $("token").value.trim();
      if (value) window.sessionStorage.setItem(TOKEN_KEY, value);
      $("token").value = "";
      refresh();
    });
    $("forget").addEventListener("click", () => {
      window.sessionStorage.removeItem(TOKEN_KEY);
      refresh();
    });
    let resizing = null;
    window.addEventListener("resize", () => {
      window.clearTimeout(resizing);
      resizing = window.setTimeout(resizeCharts, 150);
    });
    refresh();
    window.setInterval(refresh, REFRESH_MS);
  }

  start();
})();
