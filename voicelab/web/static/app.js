// voicelab live demo: mic -> WebRTC -> the voicelab pipeline -> bot audio back, plus the
// live denoising canvas and a latency meter fed over the data channel. No libraries, no CDN.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  // The onset rule of docs/metrics.md, applied to analyser windows: a window is voiced above
  // GATE_DBFS; an onset needs MIN_VOICED_MS of voiced windows; a silence shorter than MIN_GAP_MS
  // does not end a stretch (pauses between words, gaps between the bot's phrases).
  const GATE_DBFS = -40;
  const MIN_VOICED_MS = 50;
  const MIN_GAP_MS = 300;
  const POLL_MS = 10;
  const KEEPALIVE_MS = 2000;
  const ICE_GATHER_WAIT_MS = 1500;
  const READY_TIMEOUT_MS = 30000; // the server gives up on a browser that has not connected by then too
  const CLOCK_PINGS = 5; // ping/pong round trips right after the data channel opens (clock offset)
  const CLOCK_PING_GAP_MS = 200;
  const JITTER_WINDOW_MS = 300; // the reply audio whose jitter-buffer delay is reported
  const BYE_WAIT_MS = 1500; // at "stop", how long the goodbye may take to reach the server before the call is cut

  // Public, read-only view of what the page measured (the browser test reads it).
  const stats = {
    state: "idle",
    pcId: null,
    serverMessages: 0,
    canvasMessages: 0,
    committedCellsMax: 0,
    botOnsets: 0,
    micSpeechEnds: 0,
    clientFarMs: [],
    clientReports: [], // what was sent to the server with each client FAR
    clockSamples: 0, // ping/pong round trips reported for the clock offset
    serverFarMs: [],
    lastError: null,
    timeline: [], // recent [performance.now() ms, what] pairs, for debugging a measurement
  };

  function mark(what) {
    stats.timeline.push([Math.round(performance.now()), what]);
    if (stats.timeline.length > 200) stats.timeline.shift();
  }
  window.voicelab = stats;

  let session = null; // the live connection, see start()
  let closing = null; // a connection stop() is ending (waiting for its goodbye): a closed tab still reports it
  const turns = new Map(); // turn -> {row, server, client, userLi, botLi, chunks}

  // ---------------------------------------------------------------- options
  async function loadOptions() {
    try {
      const r = await fetch("/api/options");
      if (!r.ok) throw new Error(`options: HTTP ${r.status}`);
      const opts = await r.json();
      for (const [key, values] of Object.entries(opts.choices)) {
        const sel = $(`opt-${key}`);
        if (!sel) continue;
        sel.replaceChildren();
        for (const v of values) {
          const o = document.createElement("option");
          o.value = v;
          o.textContent = v.includes("/") ? v.split("/").filter(Boolean).pop() : v; // a checkpoint folder
          o.title = v;
          sel.append(o);
        }
        if (opts.defaults[key] != null) sel.value = opts.defaults[key];
      }
    } catch (e) {
      setStatus("error", `cannot load options: ${e.message}`);
    }
  }

  function chosenOptions() {
    const out = {};
    for (const key of ["engine", "sampler", "policy", "vad", "stt"]) {
      const sel = $(`opt-${key}`);
      if (sel && sel.value) out[key] = sel.value;
    }
    return out;
  }

  function setSettingsEnabled(on) {
    for (const sel of document.querySelectorAll("#settings select")) sel.disabled = !on;
  }

  // A new session starts a new conversation: its turns are numbered from 0 again.
  function resetView() {
    turns.clear();
    $("transcript").replaceChildren();
    $("latency").querySelector("tbody").replaceChildren();
    $("far-server").textContent = "–";
    $("far-client").textContent = "–";
    $("canvas-meta").textContent = "";
    $("session-info").textContent = "";
    $("history").replaceChildren();
    historyGen = null;
  }

  function setStatus(state, text) {
    stats.state = state;
    const el = $("status");
    el.dataset.state = state;
    el.textContent = text || state;
  }

  // ---------------------------------------------------------------- level detection
  function dbfs(analyser, buf) {
    analyser.getFloatTimeDomainData(buf);
    let mean = 0;
    for (let i = 0; i < buf.length; i++) mean += buf[i];
    mean /= buf.length;
    let sq = 0;
    for (let i = 0; i < buf.length; i++) {
      const x = buf[i] - mean; // mean removed, as in the onset rule: DC carries no energy
      sq += x * x;
    }
    const rms = Math.sqrt(sq / buf.length);
    return rms > 0 ? 20 * Math.log10(rms) : -120;
  }

  // Tracks voiced stretches of one signal; times in performance.now() milliseconds.
  class Voicing {
    constructor() {
      this.runStart = null; // first voiced window of the current voiced run
      this.lastVoiced = null; // last voiced window of a run that lasted MIN_VOICED_MS
      this.active = false; // inside a stretch (onset seen, no MIN_GAP_MS silence since)
    }
    // Returns "onset" when a stretch starts, "offset" when one has ended, else null.
    update(voiced, t) {
      if (voiced) {
        if (this.runStart === null) this.runStart = t;
        if (t - this.runStart >= MIN_VOICED_MS) {
          const wasActive = this.active;
          this.lastVoiced = t;
          this.active = true;
          if (!wasActive) return "onset";
        }
        return null;
      }
      this.runStart = null;
      if (this.active && t - this.lastVoiced >= MIN_GAP_MS) {
        this.active = false;
        return "offset";
      }
      return null;
    }
  }

  function startMonitor(s) {
    const fftSize = 512; // about 10.7 ms at 48 kHz: the onset rule's 10 ms window
    const micBuf = new Float32Array(fftSize);
    const botBuf = new Float32Array(fftSize);
    s.micAnalyser.fftSize = fftSize;
    const mic = new Voicing();
    const bot = new Voicing();
    let micEnd = null; // end of the latest mic speech stretch, once it is over
    let pairedEnd = -Infinity; // the mic speech end the last client FAR was measured from
    s.pollTimer = setInterval(() => {
      const t = performance.now() - (fftSize / 2 / s.audioCtx.sampleRate) * 1000; // window centre
      const micDb = dbfs(s.micAnalyser, micBuf);
      $("mic-level").value = Math.max(-80, micDb);
      const m = mic.update(micDb > GATE_DBFS, t);
      if (m === "offset") {
        micEnd = mic.lastVoiced;
        stats.micSpeechEnds += 1;
        mark(`mic speech end at ${Math.round(micEnd)}`);
      } else if (m === "onset") {
        mark(`mic speech onset at ${Math.round(mic.runStart)}`);
        micEnd = null; // the caller speaks again: the reply to come answers this stretch
      }
      if (!s.botAnalyser) return;
      const botDb = dbfs(s.botAnalyser, botBuf);
      $("bot-level").value = Math.max(-80, botDb);
      if (bot.update(botDb > GATE_DBFS, t) !== "onset") return;
      stats.botOnsets += 1;
      const onsetT = bot.runStart; // the onset is the first window of the voiced run
      mark(`bot audio onset at ${Math.round(onsetT)}`);
      // The reply answers the caller's latest speech stretch. Its offset is only declared
      // MIN_GAP_MS after the last voiced window, so a mic that is quiet now but not yet
      // declared over also counts. Each speech end is paired with one onset only: the bot's
      // later phrases of the same reply are not answers.
      let end = micEnd;
      if (end === null && mic.active && mic.runStart === null) end = mic.lastVoiced;
      if (end !== null && end > pairedEnd && onsetT > end) {
        pairedEnd = end;
        micEnd = null;
        recordClientFar(onsetT - end, end, onsetT);
      }
    }, POLL_MS);
  }

  // ---------------------------------------------------------------- connection
  async function start() {
    if (session) return;
    $("start").disabled = true;
    setSettingsEnabled(false);
    resetView();
    mark("start");
    setStatus("starting", "asking for the microphone…");
    const s = { pc: null, dc: null, stream: null, audioCtx: null, pcId: null, pendingCandidates: [] };
    session = s;
    $("stop").disabled = false;
    try {
      s.stream = await navigator.mediaDevices.getUserMedia({
        audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true },
        video: false,
      });
      if (session !== s) { // stopped while the browser asked for the microphone
        s.stream.getTracks().forEach((t) => t.stop());
        return;
      }
      s.audioCtx = new AudioContext();
      s.micAnalyser = s.audioCtx.createAnalyser();
      s.audioCtx.createMediaStreamSource(s.stream).connect(s.micAnalyser);

      const pc = new RTCPeerConnection({ iceServers: [] });
      s.pc = pc;
      // The data channel is opened before the offer, so it is part of the first negotiation.
      const dc = pc.createDataChannel("voicelab", { ordered: true });
      s.dc = dc;
      dc.onmessage = (ev) => onServerMessage(ev.data);
      dc.onclose = () => {
        if (session === s) stop("the server ended the session");
      };
      dc.onopen = () => {
        mark("data channel open");
        dc.send(JSON.stringify({ type: "hello", agent: navigator.userAgent }));
        for (let i = 0; i < CLOCK_PINGS; i++) setTimeout(() => sendPing(dc), CLOCK_PING_GAP_MS * i);
        s.keepalive = setInterval(() => {
          if (dc.readyState === "open") dc.send(JSON.stringify({ type: "keepalive" }));
          sendPing(dc); // one more clock sample: the least round trip of the session wins
        }, KEEPALIVE_MS);
      };
      pc.addTransceiver(s.stream.getAudioTracks()[0], { direction: "sendrecv" });
      pc.ontrack = (ev) => attachBotAudio(s, ev.streams[0] || new MediaStream([ev.track]));
      pc.onconnectionstatechange = () => {
        const st = pc.connectionState;
        if (st === "connected" && stats.state === "signalling") setStatus("loading", "connected; loading the pipeline…");
        if (st === "failed" || st === "closed") stop(st === "failed" ? "connection failed" : null);
      };
      pc.onicecandidate = (ev) => {
        if (!ev.candidate || !ev.candidate.candidate) return;
        if (s.pcId) patchCandidates(s, [ev.candidate]);
        else s.pendingCandidates.push(ev.candidate);
      };

      setStatus("signalling", "connecting…");
      s.readyTimer = setTimeout(() => {
        if (session === s && stats.state !== "ready") stop("could not reach the server over WebRTC (ICE)");
      }, READY_TIMEOUT_MS);
      await pc.setLocalDescription(await pc.createOffer());
      await gatheringDone(pc, ICE_GATHER_WAIT_MS);
      if (session !== s) return;
      const r = await fetch("/api/offer", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          sdp: pc.localDescription.sdp,
          type: pc.localDescription.type,
          request_data: chosenOptions(),
        }),
      });
      const body = await r.json().catch(() => ({}));
      if (session !== s) {
        // stopped while the offer was answered: that session must go too
        if (r.ok) navigator.sendBeacon("/api/session/close", new Blob([JSON.stringify({ pc_id: body.pc_id })], { type: "application/json" }));
        return;
      }
      if (!r.ok) {
        const msg = body.error || body.detail || `HTTP ${r.status}`;
        await stop(null);
        setStatus(r.status === 503 ? "full" : "error", msg);
        stats.lastError = msg;
        return;
      }
      mark("answer received");
      s.pcId = body.pc_id;
      stats.pcId = body.pc_id;
      await pc.setRemoteDescription({ sdp: body.sdp, type: body.type });
      // Candidates the offer went without (gathering still running) are trickled now.
      const late = s.pendingCandidates.filter((c) => !pc.localDescription.sdp.includes(c.candidate));
      s.pendingCandidates = [];
      if (late.length) patchCandidates(s, late);
    } catch (e) {
      if (session !== s) return;
      stats.lastError = String(e && e.message ? e.message : e);
      await stop(null);
      setStatus("error", stats.lastError);
    }
  }

  // The server answers a ping with its call clock; the page reports the round trip (clock offset, NTP-style).
  function sendPing(dc) {
    if (dc.readyState === "open") dc.send(JSON.stringify({ type: "ping", t: performance.now() }));
  }

  function gatheringDone(pc, waitMs) {
    if (pc.iceGatheringState === "complete") return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      pc.addEventListener("icegatheringstatechange", () => {
        if (pc.iceGatheringState === "complete") {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  }

  function patchCandidates(s, cands) {
    fetch("/api/offer", {
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        pc_id: s.pcId,
        candidates: cands.map((c) => ({ candidate: c.candidate, sdp_mid: c.sdpMid, sdp_mline_index: c.sdpMLineIndex })),
      }),
    }).catch(() => {});
  }

  function attachBotAudio(s, stream) {
    // The stream must also play in an <audio> element: with only the analyser attached,
    // Chromium delivers silence to the analyser.
    const audio = $("bot-audio");
    audio.srcObject = stream;
    audio.play().catch(() => {});
    s.botAnalyser = s.audioCtx.createAnalyser();
    s.botAnalyser.fftSize = 512;
    s.audioCtx.createMediaStreamSource(stream).connect(s.botAnalyser);
    if (!s.pollTimer) startMonitor(s);
  }

  async function stop(reason) {
    const s = session;
    if (!s) return;
    session = null;
    closing = s;
    clearInterval(s.pollTimer);
    clearInterval(s.keepalive);
    clearTimeout(s.readyTimer);
    try {
      if (s.dc && s.dc.readyState === "open") {
        s.dc.send(JSON.stringify({ type: "bye" }));
        // pc.close() drops what the data channel has not delivered yet, such as a client FAR sent a moment
        // ago; the channel is ordered, so once the server has the goodbye it has everything before it, and it
        // then ends the session and closes the channel. Wait for that, up to BYE_WAIT_MS.
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, BYE_WAIT_MS);
          s.dc.addEventListener("close", () => { clearTimeout(timer); resolve(); }, { once: true });
        });
      }
    } catch (e) { /* closing anyway */ }
    if (s.pc) s.pc.close(); // the server sees the peer go at once, not at the WebRTC timeout
    if (s.stream) s.stream.getTracks().forEach((t) => t.stop());
    if (s.audioCtx) s.audioCtx.close().catch(() => {});
    $("bot-audio").srcObject = null;
    $("start").disabled = false;
    $("stop").disabled = true;
    setSettingsEnabled(true);
    if (closing === s) closing = null;
    setStatus(reason ? "error" : "idle", reason || "stopped");
  }

  // Tab closed or navigated away: tell the server even if the data channel is already gone.
  // A tab closed during stop()'s goodbye wait would otherwise leave the server waiting for WebRTC's timeout.
  window.addEventListener("pagehide", () => {
    const s = session || closing;
    if (!s) return;
    if (s.pcId) {
      navigator.sendBeacon("/api/session/close", new Blob([JSON.stringify({ pc_id: s.pcId })], { type: "application/json" }));
    }
    if (s === session) stop(null);
  });

  // ---------------------------------------------------------------- server messages
  function onServerMessage(data) {
    const receivedAt = performance.now(); // before parsing: a pong's round trip ends here
    let msg;
    try {
      msg = JSON.parse(data);
    } catch (e) {
      return;
    }
    if (!msg || msg.source !== "voicelab") return; // RTVI and signalling messages are not ours
    stats.serverMessages += 1;
    if (msg.type !== "canvas" && msg.type !== "pong") mark(`message ${msg.type}${msg.state ? " " + msg.state : ""}${msg.speaking != null ? " speaking=" + msg.speaking : ""}`);
    switch (msg.type) {
      case "status":
        setStatus(msg.state, msg.detail);
        if (msg.options) {
          const o = msg.options;
          $("session-info").textContent =
            `${o.engine} · ${o.sampler} · gate ${o.policy} · VAD ${o.vad} · ${o.stt} · turn ${o.turn} · barge-in ${o.barge_in}`;
        }
        break;
      case "vad":
        $("status").textContent = msg.speaking ? "listening… (you are speaking)" : "ready — speak";
        break;
      case "user":
        showUser(msg);
        break;
      case "turn":
        turnRow(msg.turn);
        break;
      case "bot":
        showBot(msg);
        break;
      case "interrupted":
        showInterrupted(msg);
        break;
      case "canvas":
        stats.canvasMessages += 1;
        renderCanvas(msg);
        break;
      case "latency":
        showServerLatency(msg);
        break;
      case "tool":
        showTool(msg);
        break;
      case "pong":
        if (session && session.dc && session.dc.readyState === "open") {
          session.dc.send(JSON.stringify({ type: "clock", page_send_ms: msg.t, page_recv_ms: receivedAt, server_ms: msg.server_ms }));
          stats.clockSamples += 1;
        }
        break;
      case "notice":
        console.warn(`voicelab: ${msg.message}`);
        break;
      case "error":
        stats.lastError = msg.message;
        setStatus("error", msg.message);
        break;
      default:
        break;
    }
  }

  // ---------------------------------------------------------------- canvas
  const STATE_CLASS = { m: "masked", t: "tentative", c: "committed", s: "spoken", e: "end" };

  let historyGen = null;

  function renderHistory(msg) {
    const el = $("history");
    if (msg.gen !== historyGen) {
      historyGen = msg.gen;
      el.replaceChildren();
    }
    for (const [step, states, revised] of msg.steps || []) {
      const row = document.createElement("div");
      row.className = "row";
      const label = document.createElement("span");
      label.className = "step";
      label.textContent = `step ${step}`;
      row.append(label);
      const rev = new Set(revised);
      for (let i = 0; i < states.length; i++) {
        const dot = document.createElement("span");
        dot.className = `dot ${STATE_CLASS[states[i]] || "masked"}${rev.has(i) ? " revised" : ""}`;
        row.append(dot);
      }
      el.append(row);
    }
    while (el.childElementCount > 64) el.firstElementChild.remove();
  }

  function renderCanvas(msg) {
    renderHistory(msg);
    const el = $("canvas");
    const revised = new Set(msg.revised || []);
    const frag = document.createDocumentFragment();
    let committed = 0;
    for (let i = 0; i < msg.state.length; i++) {
      const st = msg.state[i];
      const cell = document.createElement("span");
      cell.className = `cell ${STATE_CLASS[st] || "masked"}`;
      if (revised.has(i)) cell.classList.add("revised");
      const piece = msg.pieces[i] || "";
      cell.textContent = st === "m" ? "\u2591" : st === "e" ? "\u00b7" : piece;
      cell.title = `position ${i}`;
      if (st === "c" || st === "s") committed += 1;
      frag.append(cell);
    }
    el.replaceChildren(frag);
    stats.committedCellsMax = Math.max(stats.committedCellsMax, committed);
    const masked = (msg.state.match(/m/g) || []).length;
    $("canvas-meta").textContent =
      `turn ${msg.turn} · step ${msg.step} · ${masked} masked · ${committed} committed` +
      (msg.revisions ? ` · ${msg.revisions} revisions` : "") + (msg.done ? " · done" : "");
  }

  // ---------------------------------------------------------------- transcript
  function turnEntry(turn) {
    let t = turns.get(turn);
    if (!t) {
      t = { row: null, server: null, client: null, userLi: null, botLi: null, chunks: new Map() };
      turns.set(turn, t);
    }
    return t;
  }

  function li(cls, who) {
    const item = document.createElement("li");
    item.className = cls;
    const w = document.createElement("span");
    w.className = "who";
    w.textContent = who;
    const text = document.createElement("span");
    text.className = "text";
    item.append(w, text);
    $("transcript").append(item);
    item.scrollIntoView({ block: "nearest" });
    return item;
  }

  function showUser(msg) {
    const t = turnEntry(msg.turn);
    if (!t.userLi) t.userLi = li("user", "you");
    t.userLi.classList.toggle("interim", !msg.final);
    t.userLi.querySelector(".text").textContent = msg.text;
  }

  function showBot(msg) {
    const t = turnEntry(msg.turn);
    if (!t.botLi) t.botLi = li("bot", "bot");
    let span = t.chunks.get(msg.chunk_id);
    if (!span) {
      span = document.createElement("span");
      span.className = "chunk";
      t.chunks.set(msg.chunk_id, span);
      const text = t.botLi.querySelector(".text");
      if (text.childNodes.length) text.append(" ");
      text.append(span);
    }
    span.textContent = msg.text;
    span.className = `chunk ${msg.state}`;
  }

  function showInterrupted(msg) {
    const t = turnEntry(msg.turn);
    if (!t.botLi || t.botLi.querySelector(".note")) return;
    const note = document.createElement("span");
    note.className = "note";
    note.textContent = "(interrupted)";
    t.botLi.append(note);
  }

  function showTool(msg) {
    const t = turnEntry(msg.turn);
    if (!t.botLi) t.botLi = li("bot", "bot");
    const note = document.createElement("span");
    note.className = "tool";
    note.textContent = `tool call ${msg.raw}`;
    t.botLi.append(note);
  }

  // ---------------------------------------------------------------- latency
  const PARTS = ["endpointing", "stt", "engine_first_commit", "gate_to_tts", "tts_first_audio", "playout"];

  function fmt(ms) {
    return ms == null ? "–" : `${Math.round(ms)} ms`;
  }

  function turnRow(turn) {
    const t = turnEntry(turn);
    if (!t.row) {
      t.row = document.createElement("tr");
      t.row.innerHTML = '<td class="turn"></td><td class="server">–</td><td class="bar"><div class="stack"></div></td><td class="client">–</td><td class="delta">–</td>';
      t.row.querySelector(".turn").textContent = String(turn);
      $("latency").querySelector("tbody").prepend(t.row);
    }
    return t;
  }

  function showServerLatency(msg) {
    const t = turnRow(msg.turn);
    t.server = msg;
    stats.serverFarMs.push(msg.server_far_ms);
    t.row.querySelector(".server").textContent = fmt(msg.server_far_ms);
    const stack = t.row.querySelector(".stack");
    stack.replaceChildren();
    const total = Math.max(1, msg.server_far_ms || 0);
    const tip = [];
    for (const p of PARTS) {
      const v = msg.breakdown ? msg.breakdown[p] : null;
      if (v == null) continue;
      tip.push(`${p.replaceAll("_", " ")} ${Math.round(v)} ms`);
      if (v <= 0) continue;
      const seg = document.createElement("span");
      seg.className = `part ${p}`;
      seg.style.width = `${(100 * v) / total}%`;
      seg.title = `${p.replaceAll("_", " ")}: ${Math.round(v)} ms`;
      stack.append(seg);
    }
    t.row.querySelector(".bar").title = tip.join(" · ");
    $("far-server").textContent = fmt(msg.server_far_ms);
    updateDelta(t);
  }

  function recordClientFar(ms, micEnd, botOnset) {
    stats.clientFarMs.push(ms);
    $("far-client").textContent = fmt(ms);
    // The reply heard now answers the latest turn the server announced that has no client figure.
    let target = null;
    for (const [turn, t] of turns) {
      if (t.row && t.client == null && (target === null || turn > target)) target = turn;
    }
    reportClientFar(ms, micEnd, botOnset, target);
    if (target === null) return;
    const t = turns.get(target);
    t.client = ms;
    t.row.querySelector(".client").textContent = fmt(ms);
    updateDelta(t);
  }

  // The bot audio's cumulative jitter-buffer counters (sums over emitted samples), or null.
  async function jitterCounters(pc) {
    let out = null;
    try {
      (await pc.getStats()).forEach((r) => {
        if (r.type === "inbound-rtp" && r.kind === "audio") {
          out = { delay: r.jitterBufferDelay, emitted: r.jitterBufferEmittedCount, target: r.jitterBufferTargetDelay };
        }
      });
    } catch (e) { /* no stats: the figure goes without the jitter buffer */ }
    return out;
  }

  // The figure goes to the server with the timestamps it came from (performance.now() ms) and the jitter
  // buffer of the reply's first JITTER_WINDOW_MS of audio (counter differences: the buffer's depth now, not
  // its mean over the session), so the run folder can account for client − server part by part.
  async function reportClientFar(ms, micEnd, botOnset, turn) {
    const s = session;
    if (!s || !s.dc) return;
    const msg = { type: "client_far", far_ms: ms, mic_end_ms: micEnd, bot_onset_ms: botOnset, turn };
    const t = turn === null ? null : turns.get(turn);
    if (t && t.server) msg.server_far_ms = t.server.server_far_ms;
    const a = await jitterCounters(s.pc);
    await new Promise((resolve) => setTimeout(resolve, JITTER_WINDOW_MS));
    const b = await jitterCounters(s.pc);
    if (a && b && b.emitted > a.emitted) {
      msg.jb_delay_s = b.delay - a.delay;
      msg.jb_emitted = b.emitted - a.emitted;
      if (b.target != null && a.target != null) msg.jb_target_s = b.target - a.target; // what it aims for
      // how long after the bot's onset the window closed: no sample in it waited longer than the onset's
      // own downlink plus this, since none was sent before the onset
      msg.jb_window_end_ms = performance.now() - botOnset;
    }
    stats.clientReports.push(msg);
    if (s.dc.readyState === "open") s.dc.send(JSON.stringify(msg));
  }

  function updateDelta(t) {
    if (t.client == null || !t.server || t.server.server_far_ms == null) return;
    t.row.querySelector(".delta").textContent = `${Math.round(t.client - t.server.server_far_ms)} ms`;
  }

  // ---------------------------------------------------------------- wiring
  $("start").addEventListener("click", () => start());
  $("stop").addEventListener("click", () => stop(null));
  loadOptions();
})();
