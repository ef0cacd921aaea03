/*
 * firepool judging page: judge caption-video pairs with the keyboard (or touch).
 *
 * The server leases two pairs at a time: `current` (on screen) and `upcoming`. Two
 * <video> elements take turns: the visible one plays `current`, the hidden one already
 * loads `upcoming` (preload="auto"), and on advance they swap, so the next video shows
 * and plays at once. A label does not wait for the server: the next pair shows on the key
 * press and the answer is reconciled when it comes (one queue of requests, sent in order);
 * an answer that does not get through brings its pair back in front with a message. Every
 * judgement attempt carries a client UUID that is kept until the server acknowledges it, so
 * retries after a network failure never count twice. R and N wait for the video's first
 * frame (a label means the video was seen), every label says how many seconds of it played,
 * and a video that does not play offers one key, B, to report it broken. A task's
 * `pair` is an opaque id (a string): it is sent back as it came and only compared, never
 * read, so nothing on the page depends on which pair, or which kind of task, it names.
 *
 * Every key, button and on-screen key hint comes from one table, ACTIONS.
 *
 * With no pair on screen the page shows the annotator's state as the API reports it
 * (`state`: heading, message, next step and tone, from annotation/annotator_state.py), the
 * same the home list shows. A training answer's feedback stays beside its pair until Next.
 * While a pair is on screen the page asks standing/ when the server has said nothing for a
 * poll's time (and when it is seen again), so an admin's pause, or the campaign paused or
 * closed, shows without an answer.
 *
 * Test hooks exist only when the page is opened with window.FIREPOOL_TEST = true (the
 * browser tests and bench/judge_latency.py set it before the page's scripts run):
 * window.firepoolJudge = {state, lastAdvanceMs, ...}; document receives
 * CustomEvent("firepool:shown", {detail: {pair, preloaded, ms, cause, waiting}}) once a
 * pair's video is visible and playable (ms: from the key press to playable; waiting: answers
 * not yet acknowledged then); body[data-pair] holds the id of the task on screen,
 * body[data-judge-state] the page's mode and body[data-video-state] its video's (waiting,
 * seen, broken); ?nopreload
 * switches preloading off, so the latency bench can show what it buys.
 */
(function () {
  "use strict";

  const root = document.getElementById("judge");
  if (!root) {
    return;
  }
  const apiBase = root.dataset.apiBase.replace(/\/?$/, "/");
  const byId = (id) => document.getElementById(id);
  const els = {
    caption: byId("judge-caption"),
    segment: byId("judge-segment"),
    stage: byId("judge-stage"),
    progress: byId("judge-progress"),
    feedback: byId("judge-feedback"),
    feedbackPair: byId("judge-feedback-pair"),
    question: root.querySelector(".judge-question"),
    stateBox: byId("judge-state"),
    stateMessage: byId("judge-state-message"),
    stateNext: byId("judge-state-next"),
    meter: byId("judge-meter"),
    meterFill: byId("judge-meter-fill"),
    status: byId("judge-status"),
    statusText: byId("judge-status-text"),
    retry: byId("judge-retry"),
    form: byId("judge-escalate"),
    reason: byId("judge-reason"),
    guidelines: byId("judge-guidelines"),
    escalateButton: root.querySelector('[data-action="escalate"]'),
    brokenButton: root.querySelector('[data-action="broken"]'),
    guidelinesButton: root.querySelector('[data-action="guidelines"]'),
  };
  let active = byId("judge-video-a");
  let standby = byId("judge-video-b");

  const MESSAGES = {
    finished: "All done",
    waiting: "Waiting for a free pair",
    slowDown: "Several of your recent answers came faster than a video can be watched; more will pause you here.",
    leaseExpired: "Your time on this pair ran out; here is the next one",
    network: "Network problem — your judgement is kept and will be retried",
    networkSync: "Network problem — will retry",
    signedOut: "You are signed out or may not judge this campaign — reload the page to log in.",
    emptyReason: "Say in a few words why this pair cannot be judged.",
    videoBroken: "This video does not play, so this pair cannot be judged: report it with B. The browser says:",
    notSeen: "R and N wait until the video shows: a label means the video was seen.",
    notConfirmed: "Your answer was not confirmed, so its pair is back:",
    passed: "You passed the qualification: your answers count from now on. Judge on.",
    loadingNext: "Loading the next pair…",
    stopped: "You may not judge in this campaign now.",
  };
  const TESTING = window.FIREPOOL_TEST === true;
  const PRELOAD = !(TESTING && new URLSearchParams(window.location.search).has("nopreload"));
  const REQUEST_TIMEOUT_MS = 15000;
  const RETRY_FIRST_MS = 2000;
  const RETRY_MAX_MS = 30000;
  const WAITING_POLL_MS = 15000;
  // While a pair is on screen, how often the page asks whether the annotator may still judge
  // (the server's setting FIREPOOL_STANDING_POLL_SECONDS, in data-standing-poll-ms).
  const STANDING_POLL_MS = Number(root.dataset.standingPollMs) || 12000;
  // When the server last answered anything: a refused answer says a pause as the poll would,
  // so the poll is asked only after STANDING_POLL_MS without one (an annotator who answers
  // every few seconds never polls; bench/load.py: the polls of 250 annotators every 12 s
  // lifted the judging p99 from 44.5 to 62.1 ms on two cores).
  let lastHeardAt = performance.now();
  const NO_PICTURE_MS = 1500; // data loaded, no picture size: an undecodable video track
  const STALL_MS = 12000; // nothing shown this long after the pair came: broken
  const MAX_STEP_S = 1.5; // a larger jump of currentTime is a seek, not time played

  const state = {
    mode: "loading", // loading | judging | feedback | finished | waiting
    annotator: null, // the annotator's state (annotation.annotator_state), as the API says it
    held: null, // after a training answer: the response to apply once "Next" is pressed
    campaign: null,
    current: null,
    upcoming: null,
    progress: null,
    qualification: null,
    finished: false,
    busy: false, // a request is in flight
    queue: [], // requests to send in order, the one in flight first (pump)
    pending: null, // a failed attempt, kept (same UUID) until the server acknowledges it
    shownAt: 0, // performance.now() when the current pair became visible
    escalating: false,
  };
  const api = {
    state: state,
    advances: [], // {pair, preloaded, ms, cause} per pair shown
    lastAdvanceMs: null,
    activeVideo: () => active,
    standbyVideo: () => standby,
  };
  if (TESTING) {
    window.firepoolJudge = api;
  }

  let retryTimer = null;
  let retryDelay = RETRY_FIRST_MS;
  let waitingTimer = null;
  let showToken = 0;

  // --- small helpers --------------------------------------------------------------------

  function newUuid() {
    const cryptoApi = window.crypto;
    if (cryptoApi && typeof cryptoApi.randomUUID === "function") {
      return cryptoApi.randomUUID(); // secure contexts only (https, localhost)
    }
    const bytes = new Uint8Array(16);
    if (cryptoApi && typeof cryptoApi.getRandomValues === "function") {
      cryptoApi.getRandomValues(bytes);
    } else {
      for (let i = 0; i < 16; i += 1) {
        bytes[i] = Math.floor(Math.random() * 256);
      }
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    return [hex.slice(0, 8), hex.slice(8, 12), hex.slice(12, 16), hex.slice(16, 20), hex.slice(20)].join("-");
  }

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) {
      return decodeURIComponent(match[1]);
    }
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function eventTime(event) {
    // event.timeStamp shares performance.now()'s clock in current browsers.
    const now = performance.now();
    if (event && event.timeStamp > 0 && event.timeStamp <= now) {
      return event.timeStamp;
    }
    return now;
  }

  function expose(name, value) {
    // Test hooks on <body>: the pair on screen and the page's mode.
    if (TESTING) {
      document.body.dataset[name] = value;
    }
  }

  function setMode(mode) {
    state.mode = mode;
    expose("judgeState", mode);
    refreshButtons();
    els.stage.classList.toggle("is-empty", mode === "finished" || mode === "waiting");
    root.classList.toggle("is-idle", mode === "finished" || mode === "waiting");
    root.classList.toggle("is-feedback", mode === "feedback");
  }

  function refreshButtons() {
    // R and N once the video was seen and nothing the server must answer first is queued;
    // Escalate while a pair is on screen; Report broken video only for a broken one.
    const judging = state.mode === "judging" && Boolean(state.current);
    const seen = judging && media.seen && !blocked();
    root.querySelectorAll(".judge-btn").forEach((button) => {
      const name = button.dataset.action;
      button.disabled = name === "escalate" ? !judging : name === "broken" ? !(judging && media.broken) : !seen;
    });
  }

  function setBusy(busy) {
    refreshButtons();
    state.busy = busy;
    root.classList.toggle("is-busy", busy);
    root.setAttribute("aria-busy", busy ? "true" : "false");
  }

  function showStatus(text, kind, withRetry) {
    delete els.statusText.dataset.about;
    els.statusText.textContent = text;
    els.status.dataset.kind = kind || "info";
    els.retry.hidden = !withRetry;
    els.status.hidden = false;
  }

  function clearStatus() {
    els.statusText.textContent = "";
    els.retry.hidden = true;
    els.status.hidden = true;
  }

  function renderProgress(progress) {
    if (!progress) {
      return;
    }
    const n = (value) => (typeof value === "number" ? value.toLocaleString("en") : "–");
    const q = state.qualification;
    const key = state.annotator ? state.annotator.key : "";
    if (key === "qualification_failed" && q) {
      // Between tries nothing counts up: say how many tries are used, not a fresh counter.
      els.progress.textContent = `qualification · ${n(Math.min(q.tries_used, q.tries))} of ${n(q.tries)} tries used`;
      return;
    }
    if (q && q.required && !q.admitted) {
      // Before admission the annotator sees where they stand; afterwards nothing of it.
      const tries = `try ${Math.min(q.tries_used || 1, q.tries)} of ${q.tries}`;
      els.progress.textContent = `qualification ${n(q.done)} / ${n(q.total)} · ${tries}`;
      return;
    }
    const left = root.dataset.neededNow === "1" ? "labels needed now" : "labels left";
    els.progress.textContent =
      `judged today ${n(progress.judged_today)} · in all ${n(progress.judged_total)} · ${left} ${n(progress.labels_left)}`;
    renderMeter(progress.labels_left, progress.labels_given);
  }

  function renderMeter(labelsLeft, labelsGiven) {
    // The campaign's labels given (everyone's, with this annotator's gold answers, so every
    // answer moves it by one and gold is not told apart), of given + still needed.
    if (!els.meter || typeof labelsLeft !== "number") {
      return;
    }
    const given =
      typeof labelsGiven === "number" ? labelsGiven : Number(root.dataset.labelsDone) || 0;
    const whole = given + labelsLeft;
    const percent = whole ? Math.round((100 * given) / whole) : 100;
    els.meterFill.style.width = `${percent}%`;
    els.meter.querySelector("[role=progressbar]").setAttribute("aria-valuenow", String(percent));
    els.meter.title = `${percent}% of the campaign's labels given`;
    // The home list's words (templates/annotation/_progress.html), figure for figure.
    const order = root.dataset.neededNow === "1" ? "; the judging order decides what is needed now" : "";
    byId("judge-meter-text").textContent =
      `${given.toLocaleString("en")} label${given === 1 ? "" : "s"} given (${percent}%)${order}`;
    els.meter.hidden = false;
  }

  function short(text) {
    const value = String(text || "");
    return value.length > 60 ? `${value.slice(0, 57)}…` : value;
  }

  function renderState(annotator) {
    // The annotator's state, as the home list and the API say it: its heading replaces the
    // caption, its message and next step fill the box, its tone colours it.
    if (!annotator) {
      els.stateBox.hidden = true;
      return;
    }
    els.stateBox.className = `annotator-state state-${annotator.tone}`;
    els.stateBox.dataset.state = annotator.key;
    els.stateMessage.textContent = annotator.message;
    els.stateNext.textContent = annotator.next_step;
    els.stateBox.hidden = false;
  }

  function renderFeedback(feedback, task) {
    if (!els.feedback) {
      return;
    }
    if (!feedback) {
      els.feedback.hidden = true;
      return;
    }
    // The pair the feedback is about stays on screen; this names it too.
    const video = task ? String(task.video_url || "").split("/").pop() : "";
    els.feedbackPair.textContent = task ? `About this pair: “${short(task.caption)}”${video ? ` · video ${video}` : ""}` : "";
    els.feedback.hidden = false;
    els.feedback.classList.toggle("is-right", feedback.correct);
    els.feedback.classList.toggle("is-wrong", !feedback.correct);
    byId("judge-feedback-verdict").textContent = feedback.correct ? "Right." : "Not right.";
    byId("judge-feedback-label").textContent = `The pair is ${feedback.label === "relevant" ? "relevant" : "not relevant"}.`;
    byId("judge-feedback-explanation").textContent = feedback.explanation;
    byId("judge-feedback-guideline").textContent = feedback.guideline ? `Guideline: ${feedback.guideline}` : "";
  }

  // --- requests -------------------------------------------------------------------------

  async function call(attempt) {
    const init = {
      method: attempt.method,
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    };
    if (attempt.method !== "GET") {
      init.headers["X-CSRFToken"] = csrfToken();
      if (attempt.body !== undefined) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(attempt.body);
      }
    }
    const controller = typeof AbortController === "function" ? new AbortController() : null;
    if (controller) {
      init.signal = controller.signal;
    }
    const timer = controller ? setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS) : null;
    try {
      const response = await fetch(apiBase + attempt.path, init);
      lastHeardAt = performance.now();
      let data = null;
      try {
        data = await response.json();
      } catch (_err) {
        data = null;
      }
      return { status: response.status, ok: response.ok, data: data };
    } catch (_err) {
      return null; // network failure or timeout
    } finally {
      if (timer) {
        clearTimeout(timer);
      }
    }
  }

  function transient(result) {
    return (
      result === null ||
      result.status >= 500 ||
      result.status === 408 ||
      result.status === 429 ||
      (result.ok && (!result.data || typeof result.data !== "object"))
    );
  }

  // Semantic-role families: one colour each on the page and in the legend.
  const ROLE_FAMILY = {
    ARG0: "who",
    V: "does",
    ARG1: "what",
    ARG2: "what",
    ENT: "what",
    "ARGM-LOC": "where",
    "ARGM-DIR": "where",
    "ARGM-MNR": "how",
    "ARGM-TMP": "when",
  };

  function showCaption(task) {
    // The caption as text nodes, with each role span underlined (never innerHTML).
    const text = task.caption;
    const spans = Array.isArray(task.roles) ? task.roles : [];
    els.caption.textContent = "";
    let at = 0;
    for (const span of spans) {
      const start = Number(span[0]);
      const end = Number(span[1]);
      const family = ROLE_FAMILY[span[2]];
      if (!family || !(start >= at && end > start && end <= text.length)) {
        continue;
      }
      els.caption.appendChild(document.createTextNode(text.slice(at, start)));
      const mark = document.createElement("span");
      mark.className = `role role-${family}`;
      mark.title = `${family} (${span[2]})`;
      mark.textContent = text.slice(start, end);
      els.caption.appendChild(mark);
      at = end;
    }
    els.caption.appendChild(document.createTextNode(text.slice(at)));
  }

  function describe(detail) {
    // DRF sends a string, or field errors as {field: [messages]}.
    if (!detail || typeof detail === "string") {
      return detail || "";
    }
    if (Array.isArray(detail)) {
      return detail.map(describe).join(" ");
    }
    if (typeof detail === "object") {
      return Object.keys(detail)
        .map((field) => `${field}: ${describe(detail[field])}`)
        .join("; ");
    }
    return String(detail);
  }

  function nextAttempt(cause, pressAt) {
    return {
      kind: "next",
      cause: cause,
      method: "POST",
      path: "next/",
      pressAt: pressAt === undefined ? performance.now() : pressAt,
    };
  }

  // --- the queue of requests ---------------------------------------------------------------
  //
  // Every request goes through one queue, sent one at a time in the order the annotator
  // acted, so an undo or an escalation always follows the answers given before it. A label
  // does not wait for its answer: the next pair shows at the key press (optimistic) and the
  // server's answer is reconciled when it comes (reconcile). Undo, escalations and next/
  // wait for theirs: they change what is on screen in ways only the server knows.

  function perform(attempt) {
    state.queue.push(attempt);
    pump();
  }

  function waitingAnswers() {
    // The tasks answered on this page whose answer the server has not acknowledged yet.
    return state.queue.filter((a) => a.kind === "submit").map((a) => String(a.task.pair));
  }

  function blocked() {
    // A request that decides what comes next is queued: wait for it before judging on.
    return state.queue.some((a) => a.kind !== "submit");
  }

  async function pump() {
    if (state.busy || !state.queue.length || (state.pending && state.pending === state.queue[0])) {
      return;
    }
    const attempt = state.queue[0];
    clearTimeout(retryTimer);
    clearTimeout(waitingTimer);
    setBusy(true);
    const result = await call(attempt);
    setBusy(false);
    if (transient(result)) {
      failed(attempt);
      return;
    }
    state.queue.shift();
    state.pending = null;
    retryDelay = RETRY_FIRST_MS;
    answered(attempt, result);
    pump();
  }

  function answered(attempt, result) {
    const data = result.data || {};
    if (result.ok) {
      if (!attempt.keepStatus && !(attempt.kind === "submit" && attempt.optimistic)) {
        clearStatus();
      }
      if (attempt.kind === "escalate") {
        closeEscalate(true);
      }
      apply(data, attempt);
      if (attempt.kind === "undo" && state.current) {
        showStatus(`Undone: “${short(state.current.caption)}” is back — judge it again.`, "info", false);
      } else if (attempt.kind === "escalate" && attempt.body.kind === "broken_video") {
        showStatus(`Reported the broken video of “${short(attempt.caption)}” to an admin. Judge on.`, "info", false);
      } else if (attempt.kind === "escalate") {
        showStatus(`Sent to an admin: “${short(attempt.caption)}”. Thank you — judge on.`, "info", false);
      }
      return;
    }
    if (state.mode === "waiting-answer") {
      setMode("judging"); // the pair stays; its buttons come back
    }
    const detail = describe(data.detail || data.message) || `The server answered ${result.status}.`;
    const about = attempt.task ? `Not stored, your answer to “${short(attempt.task.caption)}”: ` : "";
    if (result.status === 401 || result.status === 403) {
      state.queue = [];
      showStatus(MESSAGES.signedOut, "error", false);
      setMode("finished");
      return;
    }
    if (data.code === "inactive" || data.code === "paused") {
      state.queue = state.queue.filter((a) => a.kind !== "submit");
      stopJudging(`${about}${detail}`);
      return;
    }
    if (data.code === "lease_expired" || data.code === "not_leased") {
      const which = attempt.optimistic ? ` (not stored: your answer to “${short(attempt.task.caption)}”)` : "";
      showStatus(`${MESSAGES.leaseExpired}${which}`, "info", false);
      resync("lease_expired");
      return;
    }
    if (attempt.kind === "undo") {
      showStatus(detail, "info", false); // undo_window, not_found: nothing changed
      return;
    }
    if (attempt.kind === "escalate" && result.status === 400 && attempt.body.kind !== "broken_video") {
      openEscalate(attempt.body.reason);
      showStatus(detail, "warn", false);
      return;
    }
    if (attempt.kind === "next") {
      showStatus(detail, "error", false);
      return;
    }
    // conflict, invalid or not found: say so and resynchronise with the server.
    showStatus(`${about}${detail}`, "warn", false);
    resync("resync");
  }

  function stopJudging(text) {
    // Paused or closed (the campaign, or this annotator): nothing more is taken. The page
    // leaves the pair at once (R and N wait behind the next/ queued here) and shows where the
    // annotator stands (next/ says it), whether an answer's reply or the standing poll said so.
    showStatus(text, "warn", false);
    resync("paused");
    refreshButtons();
  }

  let standingAsked = false;

  function onScreen() {
    return state.mode === "judging" || state.mode === "feedback";
  }

  async function checkStanding(seenAgain = false) {
    // Asked every STANDING_POLL_MS while a pair is on screen and the page is seen, and when
    // it is seen again: an admin pausing the annotator, or the campaign paused or closed,
    // changes the page within a poll rather than at the next answer. A GET that writes
    // nothing, one statement on the server; with no pair on screen next/ is asked instead.
    if (standingAsked || document.hidden || !onScreen() || state.queue.some((a) => a.kind === "next")) {
      return;
    }
    if (!seenAgain && performance.now() - lastHeardAt < STANDING_POLL_MS) {
      return; // the server answered within a poll's time: it would have said a pause
    }
    standingAsked = true;
    const result = await call({ method: "GET", path: "standing/" });
    standingAsked = false;
    const data = result && result.ok ? result.data : null;
    if (data && data.may_judge === false && onScreen()) {
      stopJudging(describe(data.detail) || MESSAGES.stopped);
    }
  }

  function resync(cause) {
    // Ask the server where we stand, once the answers queued before are sent.
    if (state.queue.some((a) => a.kind === "next")) {
      return;
    }
    const next = nextAttempt(cause);
    next.keepStatus = true;
    perform(next);
  }

  function failed(attempt) {
    // Undo carries no id, so it is never repeated blindly: ask where we stand instead.
    let retry = attempt;
    if (attempt.kind === "undo") {
      retry = nextAttempt("resync", attempt.pressAt);
      state.queue[0] = retry;
    }
    state.pending = retry;
    const judgement = retry.kind === "submit" || retry.kind === "escalate";
    const shown = state.current ? String(state.current.pair) : "";
    if (retry.kind === "submit" && retry.optimistic && shown !== String(retry.task.pair)) {
      // The answer did not reach the server: its pair comes back in front (the one shown
      // meanwhile waits behind it), and the same id goes again on retry, so nothing is
      // lost or counted twice.
      bringBack(retry.task);
    }
    showStatus(
      judgement && retry.task ? `${MESSAGES.notConfirmed} “${short(retry.task.caption)}”. ${MESSAGES.network}` : judgement ? MESSAGES.network : MESSAGES.networkSync,
      "error",
      true
    );
    retryTimer = setTimeout(retryPending, retryDelay);
    retryDelay = Math.min(retryDelay * 2, RETRY_MAX_MS);
  }

  function retryPending() {
    if (state.pending && !state.busy) {
      const retry = state.pending;
      state.pending = null;
      if (retry.kind === "submit") {
        retry.optimistic = false; // its pair is on screen again: wait for the answer
        retry.pressAt = performance.now();
      }
      pump();
    }
  }

  function bringBack(task) {
    const shown = state.current;
    state.current = task;
    if (shown && !waitingAnswers().includes(String(shown.pair))) {
      state.upcoming = shown;
    }
    show(task, { kind: "back", cause: "back" });
  }

  // --- showing pairs --------------------------------------------------------------------

  function training() {
    // Before admission every answer gets feedback beside its pair: no optimistic next.
    const q = state.qualification;
    return Boolean(q && q.required && !q.admitted);
  }

  function apply(data, attempt) {
    const wasTraining = training();
    state.campaign = data.campaign || state.campaign;
    state.progress = data.progress || state.progress;
    state.qualification = data.qualification || state.qualification;
    state.paused = data.paused || null;
    state.finished = Boolean(data.finished);
    state.annotator = data.state || null;
    expose("annotatorState", state.annotator ? state.annotator.key : "");
    root.dataset.state = state.annotator ? state.annotator.key : ""; // styles what is offered
    renderProgress(state.progress);
    if (wasTraining && !training() && state.qualification && state.qualification.admitted) {
      state.passedNote = true; // said once the pair on screen gives way
    }
    if (data.feedback && state.current) {
      // A training answer: explain it beside the pair it is about; the next pair (or the
      // qualification's outcome) comes when the annotator presses Next.
      state.held = { data: Object.assign({}, data, { feedback: null, warning: null }), attempt: attempt };
      renderFeedback(data.feedback, state.current);
      closeEscalate(false);
      setMode("feedback");
      els.feedback.querySelector("[data-action=next]").focus();
      return;
    }
    renderFeedback(null);
    reconcile(data, attempt);
    if (state.passedNote) {
      state.passedNote = false;
      showStatus(MESSAGES.passed, "done", false);
    } else if (data.warning) {
      showStatus(`${data.warning}. ${MESSAGES.slowDown}`, "warn", false);
    }
  }

  function reconcile(data, attempt) {
    // The server's current and upcoming task, less those answered here and not yet
    // acknowledged (their answers are queued), against what is on screen. An undo, an
    // escalation, or an answer with nothing queued behind it is the server's word on what
    // comes now; otherwise the pair on screen stays while the server still leases it.
    const waiting = waitingAnswers();
    const offered = [data.current, data.upcoming].filter((t) => t && !waiting.includes(String(t.pair)));
    // The pair whose answer this was is never kept on screen by it (it came back after a
    // failure and the retry went through).
    const answeredShown = attempt.task && state.current && String(attempt.task.pair) === String(state.current.pair);
    const shown = state.mode === "judging" && !answeredShown ? state.current : null;
    const decides = attempt.kind === "undo" || attempt.kind === "escalate" || attempt.cause === "load";
    let target = null;
    if (!decides && shown && offered.some((t) => String(t.pair) === String(shown.pair))) {
      target = offered.find((t) => String(t.pair) === String(shown.pair));
    } else if (!decides && waiting.length) {
      target = shown; // later answers will say
    } else {
      target = offered[0] || null;
    }
    if (!target) {
      const stopped = Boolean(state.paused) || (state.annotator && state.annotator.can_judge === false);
      if (waiting.length && !stopped) {
        return; // the next pair comes with a later answer
      }
      state.current = null;
      state.upcoming = null;
      showNothing();
      return;
    }
    renderState(null);
    els.question.hidden = false;
    const same = shown && String(shown.pair) === String(target.pair);
    state.current = target;
    state.upcoming = offered.find((t) => String(t.pair) !== String(target.pair)) || null;
    if (!same) {
      show(target, attempt);
    }
    preload(state.upcoming);
  }

  function continueAfterFeedback(pressAt) {
    if (state.mode !== "feedback" || !state.held) {
      return;
    }
    const held = state.held;
    state.held = null;
    renderFeedback(null);
    reconcile(held.data, { kind: "next", cause: "next", pressAt: pressAt });
    if (state.passedNote) {
      state.passedNote = false;
      showStatus(MESSAGES.passed, "done", false);
    }
  }

  function makeActive(video) {
    video.classList.add("is-active");
    video.classList.remove("is-standby");
    video.controls = true;
    video.autoplay = true;
    video.tabIndex = 0;
    video.removeAttribute("aria-hidden");
    video.setAttribute("aria-label", "Video to judge");
  }

  function makeStandby(video) {
    video.pause();
    video.classList.add("is-standby");
    video.classList.remove("is-active");
    video.controls = false;
    video.autoplay = false;
    video.tabIndex = -1;
    video.setAttribute("aria-hidden", "true");
    video.removeAttribute("aria-label");
  }

  function load(video, task) {
    video.muted = true;
    video.dataset.pair = String(task.pair);
    // A segment of a longer recording: the fragment starts it at the captioned span, and
    // keepInSpan loops it there (the element's own loop would go back to the clip's start).
    const span = /^#t=([0-9.]+)(?:,([0-9.]+))?$/.exec(task.video_fragment || "");
    if (span) {
      video.dataset.spanStart = span[1];
      video.dataset.spanEnd = span[2] || "";
    } else {
      delete video.dataset.spanStart;
      delete video.dataset.spanEnd;
    }
    if (task.poster_url) {
      video.poster = task.poster_url; // shown until the first frame
    } else {
      video.removeAttribute("poster");
    }
    video.src = task.video_url + (span ? task.video_fragment : ""); // starts the resource selection
  }

  function keepInSpan(event) {
    // Outside a segment's span (before it on loading or after the element's own loop, at or
    // past its end where the fragment pauses it): back to its start, playing if on screen.
    const video = event.target;
    if (video.dataset.spanStart === undefined) {
      return;
    }
    const start = Number(video.dataset.spanStart);
    const end = video.dataset.spanEnd ? Number(video.dataset.spanEnd) : Infinity;
    const now = video.currentTime;
    if (now >= start - 0.1 && now < end - 0.04 && !video.ended) {
      return;
    }
    video.currentTime = start;
    if (video === active) {
      const playing = video.play();
      if (playing && typeof playing.catch === "function") {
        playing.catch(() => {});
      }
    }
  }



  function unload(video) {
    video.pause();
    delete video.dataset.pair;
    video.removeAttribute("poster");
    if (video.hasAttribute("src")) {
      video.removeAttribute("src");
      video.load();
    }
  }

  function show(task, attempt) {
    const pressAt = attempt && attempt.pressAt !== undefined ? attempt.pressAt : performance.now();
    const preloaded =
      standby.dataset.pair === String(task.pair) && standby.hasAttribute("src") && !standby.error;
    if (preloaded) {
      const previous = active;
      active = standby;
      standby = previous;
      makeActive(active);
      makeStandby(standby);
    } else {
      load(active, task);
    }
    active.muted = true;
    const playing = active.play();
    if (playing && typeof playing.catch === "function") {
      playing.catch(() => {}); // autoplay refused: the controls still work
    }
    state.current = task;
    showCaption(task);
    els.caption.title = task.caption_key || "";
    if (els.segment) {
      els.segment.textContent = task.segment ? "Segment " + task.segment : "";
      els.segment.hidden = !task.segment;
    }
    expose("pair", String(task.pair));
    state.shownAt = performance.now();
    setMode("judging");
    const token = (showToken += 1);
    watchPicture(active, token);
    whenPlayable(active, () => {
      if (token !== showToken || !TESTING) {
        return;
      }
      const ms = Math.max(0, performance.now() - pressAt);
      const detail = {
        pair: task.pair,
        preloaded: preloaded,
        ms: Math.round(ms * 10) / 10,
        cause: attempt ? attempt.cause || attempt.kind : "load",
        waiting: waitingAnswers().length, // answers sent and not yet acknowledged
      };
      api.lastAdvanceMs = detail.ms;
      api.advances.push(detail);
      document.dispatchEvent(new CustomEvent("firepool:shown", { detail: detail }));
    });
  }

  function whenPlayable(video, callback) {
    const ready = () => {
      // One animation frame so the swapped-in player has been laid out and shown.
      window.requestAnimationFrame(() => callback());
    };
    if (video.readyState >= 3) {
      ready();
      return;
    }
    const onReady = () => {
      cleanup();
      ready();
    };
    const cleanup = () => {
      video.removeEventListener("canplay", onReady);
      video.removeEventListener("error", cleanup);
    };
    video.addEventListener("canplay", onReady);
    video.addEventListener("error", cleanup);
  }

  // --- was the video seen? ----------------------------------------------------------------
  //
  // R and N wait for the video's first frame on screen: a frame presented
  // (requestVideoFrameCallback), or decoded data with a picture size where that callback is
  // missing. A video that fails (a media error), shows no picture once its data has loaded
  // (an undecodable video track plays as audio alone, videoWidth 0), or shows nothing for
  // STALL_MS is broken: the page says so and offers one key, report broken video. The seconds
  // it played count from its first frame, in media time (a loop or a seek is not counted).

  const media = { video: null, token: 0, seen: false, broken: "", played: 0, last: null, timers: [] };
  const ERROR_NAMES = {
    1: "MEDIA_ERR_ABORTED",
    2: "MEDIA_ERR_NETWORK",
    3: "MEDIA_ERR_DECODE",
    4: "MEDIA_ERR_SRC_NOT_SUPPORTED",
  };

  function setVideoState(name) {
    expose("videoState", name);
    root.classList.toggle("is-broken", name === "broken");
    root.classList.toggle("is-unseen", name === "waiting");
    refreshButtons();
  }

  function watchPicture(video, token) {
    stopWatching();
    media.video = video;
    media.token = token;
    media.seen = false;
    media.broken = "";
    media.played = 0;
    media.last = null;
    setVideoState("waiting");
    const mine = () => token === media.token && video === active;
    const seen = () => {
      if (!mine() || media.seen) {
        return;
      }
      media.seen = true;
      media.broken = "";
      media.last = video.currentTime;
      stopWatching();
      setVideoState("seen");
      if (els.statusText.dataset.about === "video") {
        clearStatus();
      }
    };
    const picture = () => video.readyState >= 2 && video.videoWidth > 0;
    if (typeof video.requestVideoFrameCallback === "function") {
      video.requestVideoFrameCallback(() => seen());
    }
    if (picture() && !video.error) {
      // Decoded before it was shown (the preloaded next video): its current frame is on
      // screen at the paint that shows the player, one frame interval before playback
      // presents a new one (33-40 ms at 25-30 fps). The second animation frame runs after
      // that paint.
      window.requestAnimationFrame(() => window.requestAnimationFrame(() => seen()));
    }
    const check = () => {
      if (!mine() || media.seen) {
        return;
      }
      if (video.error) {
        const code = video.error.code;
        const name = ERROR_NAMES[code] || "MEDIA_ERR";
        broken(`${name} (${code})${video.error.message ? `: ${video.error.message}` : ""}`);
        return;
      }
      if (picture()) {
        // A picture is decoded; where frames are not reported, it shows at the next paint.
        if (typeof video.requestVideoFrameCallback !== "function" || video.paused) {
          window.requestAnimationFrame(() => seen());
        }
        return;
      }
      if (video.readyState >= 2 && video.videoWidth === 0) {
        media.timers.push(
          setTimeout(() => {
            if (mine() && !media.seen && video.videoWidth === 0) {
              broken("no picture: no video track it can decode (sound alone, if any)");
            }
          }, NO_PICTURE_MS)
        );
      }
    };
    ["loadeddata", "canplay", "playing", "error", "pause"].forEach((name) => {
      video.addEventListener(name, check, { once: false });
      media.timers.push({ unlisten: () => video.removeEventListener(name, check) });
    });
    media.timers.push(
      setTimeout(() => {
        if (mine() && !media.seen && !media.broken && picture()) {
          seen(); // a picture is there, though no frame was reported (a hidden page)
        } else if (mine() && !media.seen && !media.broken) {
          broken(`no picture after ${STALL_MS / 1000} s (readyState ${video.readyState}, networkState ${video.networkState})`);
        }
      }, STALL_MS)
    );
    check();
  }

  function stopWatching() {
    media.timers.forEach((t) => (typeof t === "object" && t.unlisten ? t.unlisten() : clearTimeout(t)));
    media.timers = [];
  }

  function broken(error) {
    media.broken = error;
    setVideoState("broken");
    showStatus(`${MESSAGES.videoBroken} ${error}.`, "warn", false);
    els.statusText.dataset.about = "video";
    els.brokenButton.focus({ preventScroll: true });
  }

  function playedSeconds() {
    // Media time played since the first frame: the counted steps plus the one under way.
    let total = media.played;
    if (media.seen && media.last !== null) {
      const step = active.currentTime - media.last;
      if (step > 0 && step < MAX_STEP_S) {
        total += step;
      }
    }
    return Math.round(total * 1000) / 1000;
  }

  function countPlayed(event) {
    const video = event.target;
    if (video !== active || !media.seen) {
      return;
    }
    const now = video.currentTime;
    if (media.last !== null) {
      const step = now - media.last;
      if (step > 0 && step < MAX_STEP_S) {
        media.played += step; // a loop back to 0 or a seek is no time played
      }
    }
    media.last = now;
  }

  function preload(task) {
    if (!task || !PRELOAD) {
      unload(standby);
      return;
    }
    if (standby.dataset.pair === String(task.pair) && standby.hasAttribute("src")) {
      return;
    }
    standby.preload = "auto";
    load(standby, task);
  }

  function showNothing() {
    showToken += 1;
    media.token = -1;
    stopWatching();
    unload(active);
    unload(standby);
    closeEscalate(false);
    const annotator = state.annotator;
    els.caption.textContent = annotator ? annotator.heading : state.finished ? MESSAGES.finished : MESSAGES.waiting;
    els.caption.title = "";
    els.question.hidden = true;
    expose("pair", "");
    expose("videoState", "");
    root.classList.remove("is-broken", "is-unseen");
    renderState(annotator);
    // Wait and ask again where something may free up (a pair, a retry time, the campaign
    // resuming); otherwise there is nothing more to do on this page.
    const polls = annotator ? annotator.polls || annotator.can_judge : !state.finished;
    setMode(polls ? "waiting" : "finished");
    if (polls) {
      waitingTimer = setTimeout(() => perform(nextAttempt("poll")), WAITING_POLL_MS);
    }
  }

  function showLoadingNext() {
    // Answered faster than the server told us what comes next: wait for its answer.
    showToken += 1;
    media.token = -1;
    stopWatching();
    unload(active);
    state.current = null;
    els.caption.textContent = MESSAGES.loadingNext;
    expose("pair", "");
    setMode("loading");
  }

  // --- actions --------------------------------------------------------------------------

  function judge(label, key, pressAt) {
    if (state.mode !== "judging" || !state.current || blocked()) {
      return;
    }
    if (!media.seen) {
      // A label means the video was seen: nothing is sent before its first frame.
      if (!media.broken) {
        showStatus(MESSAGES.notSeen, "info", false);
        els.statusText.dataset.about = "video";
      }
      return;
    }
    const task = state.current;
    if (state.queue.some((a) => a.kind === "submit" && a !== state.pending && a.task.pair === task.pair)) {
      return; // its answer is on its way again (a retry): one answer per pair
    }
    const seconds = Math.max(0.001, (pressAt - state.shownAt) / 1000);
    const pending = state.pending && state.pending.kind === "submit" && state.pending.task.pair === task.pair ? state.pending : null;
    const body = {
      pair: task.pair,
      label: label,
      // Kept across retries until acknowledged; a changed answer to a pair brought back is
      // a new answer (a new id).
      uuid: pending && pending.body.label === label ? pending.body.uuid : newUuid(),
      seconds: Math.round(seconds * 1000) / 1000,
      seconds_played: playedSeconds(),
    };
    if (pending) {
      clearTimeout(retryTimer);
      state.queue = state.queue.filter((a) => a !== pending);
      state.pending = null;
      if (pending.body.label === label) {
        body.seconds = pending.body.seconds; // the same answer, sent again as it was
        body.seconds_played = pending.body.seconds_played;
      }
    }
    const optimistic = !training();
    const attempt = { kind: "submit", key: key, method: "POST", path: "submit/", pressAt: pressAt, task: task, body: body, optimistic: optimistic };
    if (pending) {
      state.queue.unshift(attempt);
    } else {
      state.queue.push(attempt);
    }
    if (optimistic) {
      if (els.status.dataset.kind === "info" || els.statusText.dataset.about === "video") {
        clearStatus(); // a warning (too fast) stays until it is answered or replaced
      }
      const next = state.upcoming;
      state.upcoming = null;
      if (next) {
        show(next, attempt);
      } else {
        showLoadingNext();
      }
    } else {
      setMode("waiting-answer");
    }
    pump();
  }

  function undo(pressAt) {
    if (blocked() || state.pending) {
      return;
    }
    closeEscalate(false);
    perform({ kind: "undo", key: keyOf("undo"), method: "POST", path: "undo/", pressAt: pressAt });
  }

  function openEscalate(reason) {
    if (state.mode !== "judging" || !state.current || state.pending) {
      return;
    }
    state.escalating = true;
    els.form.hidden = false;
    root.classList.add("is-escalating");
    // On a narrow or short screen the box sits under the video: bring it, Send included, into view.
    els.form.scrollIntoView({ block: "nearest" });
    els.escalateButton.setAttribute("aria-expanded", "true");
    if (typeof reason === "string") {
      els.reason.value = reason;
    }
    els.reason.focus();
  }

  function closeEscalate(clear) {
    state.escalating = false;
    els.form.hidden = true;
    root.classList.remove("is-escalating");
    els.escalateButton.setAttribute("aria-expanded", "false");
    if (clear) {
      els.reason.value = "";
    }
    if (document.activeElement === els.reason) {
      els.reason.blur();
    }
  }

  function sendEscalation(pressAt) {
    if (blocked() || state.pending || !state.current) {
      return;
    }
    const reason = els.reason.value.trim();
    if (!reason) {
      showStatus(MESSAGES.emptyReason, "warn", false);
      els.reason.focus();
      return;
    }
    closeEscalate(false);
    setMode("waiting-answer");
    perform({
      kind: "escalate",
      key: keyOf("escalate"),
      method: "POST",
      path: "escalate/",
      pressAt: pressAt,
      caption: state.current.caption,
      body: { pair: state.current.pair, reason: reason, uuid: newUuid() },
    });
  }

  function reportBroken(pressAt) {
    if (!media.broken || !state.current || blocked() || state.pending || state.mode !== "judging") {
      return;
    }
    setMode("waiting-answer");
    perform({
      kind: "escalate",
      key: keyOf("broken"),
      method: "POST",
      path: "escalate/",
      pressAt: pressAt,
      caption: state.current.caption,
      body: {
        pair: state.current.pair,
        kind: "broken_video",
        media_error: media.broken.slice(0, 2000),
        uuid: newUuid(),
      },
    });
  }

  function toggleGuidelines(open) {
    const show = open === undefined ? els.guidelines.hidden : open;
    els.guidelines.hidden = !show;
    els.guidelinesButton.setAttribute("aria-expanded", show ? "true" : "false");
  }

  function togglePlay() {
    if (state.mode !== "judging") {
      return;
    }
    if (active.paused) {
      const playing = active.play();
      if (playing && typeof playing.catch === "function") {
        playing.catch(() => {});
      }
    } else {
      active.pause();
    }
  }


  // --- the one table of actions ----------------------------------------------------------
  //
  // name (a button's data-action) -> keys (the first is the one shown), what it does and
  // whether holding the key repeats it; `when` picks among actions sharing a key. The key
  // handler, the click handler and the <kbd> hints of the buttons all read it.
  const ACTIONS = {
    relevant: { keys: ["r"], run: (at, key) => judge("relevant", key, at) },
    irrelevant: { keys: ["n"], run: (at, key) => judge("irrelevant", key, at) },
    escalate: { keys: ["e"], run: () => openEscalate() },
    broken: { keys: ["b"], run: (at) => reportBroken(at) },
    undo: { keys: ["u"], run: (at) => undo(at) },
    guidelines: { keys: ["g", "?"], repeats: true, run: () => toggleGuidelines() },
    // Space always plays or pauses, so a focused judgement button is never pressed by it.
    play: { keys: [" ", "Spacebar"], repeats: true, run: () => togglePlay() },
    "guidelines-close": {
      keys: ["Escape"],
      when: () => !els.guidelines.hidden,
      run: () => toggleGuidelines(false),
    },
    "escalate-cancel": {
      keys: ["Escape"],
      when: () => state.escalating,
      run: () => closeEscalate(false),
    },
    retry: { keys: [], run: () => retryPending() },
    next: {
      keys: ["Enter"],
      when: () => state.mode === "feedback",
      run: (at) => continueAfterFeedback(at),
    },
  };
  const KEY_LABELS = { " ": "Space", Escape: "Esc", Enter: "Enter" };

  function keyOf(name) {
    return ACTIONS[name].keys[0];
  }

  function keyLabel(key) {
    return KEY_LABELS[key] || key.toUpperCase();
  }

  function actionFor(key) {
    return Object.keys(ACTIONS).find((name) => {
      const spec = ACTIONS[name];
      return spec.keys.includes(key) && (!spec.when || spec.when());
    });
  }

  function act(name, pressAt) {
    const spec = ACTIONS[name];
    if (!spec) {
      return;
    }
    const key = spec.keys[0];
    // A failed request waits for a retry: the same key (or Retry) sends it again.
    if (state.pending && key && state.pending.key === key) {
      retryPending();
      return;
    }
    spec.run(pressAt, key);
  }

  function renderHints() {
    // Buttons get their key after the label; a [data-hint] text gets it in front.
    root.querySelectorAll("[data-action], [data-hint]").forEach((element) => {
      const spec = ACTIONS[element.dataset.action || element.dataset.hint];
      if (!spec || !spec.keys.length) {
        return;
      }
      const kbd = document.createElement("kbd");
      kbd.textContent = keyLabel(spec.keys[0]);
      if (element.dataset.hint) {
        element.prepend(kbd, " ");
        return;
      }
      element.append(" ", kbd);
      element.setAttribute(
        "aria-keyshortcuts",
        spec.keys.map((k) => (k === " " ? "Space" : k.length === 1 ? k.toUpperCase() : k)).join(" ")
      );
    });
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) {
      return;
    }
    const target = event.target;
    if (target && (target.isContentEditable || /^(TEXTAREA|INPUT|SELECT)$/.test(target.tagName))) {
      return; // typing (the escalation reason has its own keys)
    }
    const name = actionFor(event.key.length === 1 ? event.key.toLowerCase() : event.key);
    if (!name) {
      return;
    }
    event.preventDefault();
    if (event.repeat && !ACTIONS[name].repeats) {
      return;
    }
    act(name, eventTime(event));
  });

  root.addEventListener("click", (event) => {
    const button = event.target.closest("[data-action]");
    if (!button || !root.contains(button)) {
      return;
    }
    act(button.dataset.action, eventTime(event));
  });

  els.form.addEventListener("submit", (event) => {
    event.preventDefault();
    sendEscalation(eventTime(event));
  });

  els.reason.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendEscalation(eventTime(event));
    } else if (event.key === "Escape") {
      event.preventDefault();
      closeEscalate(false);
    }
  });

  // Retry at once when the connection comes back.
  window.addEventListener("online", retryPending);
  [active, standby].forEach((video) => video.addEventListener("timeupdate", countPlayed));
  [active, standby].forEach((video) => {
    ["loadedmetadata", "timeupdate", "pause", "ended"].forEach((type) =>
      video.addEventListener(type, keepInSpan),
    );
    // timeupdate comes every quarter second or so: each frame shown is checked too, so a
    // segment loops within a frame of its end instead of showing what follows it.
    if ("requestVideoFrameCallback" in video) {
      const onFrame = (now, frame) => {
        if (video.dataset.spanEnd && frame.mediaTime >= Number(video.dataset.spanEnd) - 0.02) {
          keepInSpan({ target: video, type: "frame" });
        }
        video.requestVideoFrameCallback(onFrame);
      };
      video.requestVideoFrameCallback(onFrame);
    }
  });

  // Looked at four times a poll, so a pause shows within 1.25 polls of the server's last word.
  setInterval(() => checkStanding(false), Math.max(STANDING_POLL_MS / 4, 100));
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) {
      checkStanding(true);
    }
  });

  renderHints();
  setMode("loading");
  perform(nextAttempt("load"));
})();
