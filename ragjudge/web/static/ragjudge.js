/* ragjudge serve: the one script of the pages. No framework, no build step, nothing from
   another host.

   - Data reaches the document as text only (textContent, text nodes), never as HTML; control
     characters and bidi overrides are shown visibly, as ragjudge.safetext shows them.
   - Every write is one request with an Idempotency-Key made here, one per action and the same
     for each retry of it. A write the network or the server could not take stays in this tab
     (sessionStorage) and is sent again with back-off; the page says so meanwhile, and nothing
     else is sent until it landed. Logged out meanwhile, it is sent once the person is back.
   - A label carries `seen`, the newest label event of the pair the page showed: a label given
     meanwhile elsewhere (another tab, the app) is a 409, shown, and the person chooses.
*/
"use strict";

(function () {
  const body = document.body;
  const base = body.dataset.base || "";
  const pageName = body.dataset.page;
  const live = document.getElementById("live");
  const PENDING = "ragjudge.pending";

  // -- text from data --------------------------------------------------------------------------

  const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u061c\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

  function standIn(ch) {
    const code = ch.codePointAt(0);
    if (code < 0x20) return String.fromCodePoint(0x2400 + code);
    if (code === 0x7f) return "\u2421";
    return "\u27e8U+" + code.toString(16).toUpperCase().padStart(4, "0") + "\u27e9";
  }

  function shown(value) {
    if (value === null || value === undefined) return "";
    return String(value).replace(/\r\n/g, "\n").replace(UNSAFE, standIn);
  }

  function byId(id) {
    return document.getElementById(id);
  }

  function setText(id, value, hideEmpty) {
    const node = byId(id);
    if (!node) return;
    node.textContent = shown(value);
    if (hideEmpty) node.hidden = value === null || value === undefined || value === "";
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = shown(value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function say(text) {
    if (!live) return;
    live.textContent = "";
    window.setTimeout(function () { live.textContent = text; }, 30);
  }

  function newKey() {
    const bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    const hex = Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
  }

  // -- the connection ----------------------------------------------------------------------------

  class Stop extends Error {}

  const banner = byId("connection");
  let bannerShown = false;

  function showBanner(text) {
    if (!banner) return;
    banner.classList.remove("ok");
    banner.textContent = text;
    banner.hidden = false;
    bannerShown = true;
  }

  function clearBanner() {
    if (!banner || !bannerShown) return;
    bannerShown = false;
    banner.classList.add("ok");
    banner.textContent = "Connected again.";
    window.setTimeout(function () { if (!bannerShown) banner.hidden = true; }, 2500);
  }

  function waitFor(ms) {
    return new Promise(function (resolve) {
      const timer = window.setTimeout(done, ms);
      function done() {
        window.clearTimeout(timer);
        window.removeEventListener("online", done);
        resolve();
      }
      window.addEventListener("online", done);
    });
  }

  function retryAfter(response, delay) {
    const seconds = Number(response.headers.get("Retry-After"));
    return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : delay;
  }

  function loggedOut(data) {
    const message = (data && data.message) || "You are logged out.";
    showBanner(message + " ");
    if (banner) {
      banner.append(el("a", { href: base + "/login", text: "Log in again" }));
      banner.append(document.createTextNode(pending() ? " — what was not saved yet is sent once you are back." : "."));
    }
    body.classList.add("-logged-out");
    say(message);
  }

  const RETRY = [429, 502, 503, 504];

  async function request(method, path, payload, key, what) {
    let delay = 500;
    for (;;) {
      const headers = { Accept: "application/json" };
      if (payload !== undefined) headers["Content-Type"] = "application/json";
      if (key) headers["Idempotency-Key"] = key;
      let response;
      try {
        response = await fetch(base + path, {
          method: method, headers: headers, credentials: "same-origin", cache: "no-store",
          body: payload === undefined ? undefined : JSON.stringify(payload),
        });
      } catch (error) {
        const waiting = what ? what + " is not saved yet: it is kept here and" : "the page";
        showBanner("The connection to the server is lost; " + waiting + " will be sent again as soon as it is back (next try in " + Math.max(1, Math.round(delay / 1000)) + " s).");
        await waitFor(delay);
        delay = Math.min(delay * 2, 10000);
        continue;
      }
      if (RETRY.includes(response.status)) {
        const wait = retryAfter(response, delay);
        showBanner("The server is busy" + (what ? "; " + what + " is kept here and" : " and") + " will be sent again in " + Math.max(1, Math.round(wait / 1000)) + " s.");
        await waitFor(wait);
        delay = Math.min(delay * 2, 10000);
        continue;
      }
      clearBanner();
      let data = {};
      try {
        data = await response.json();
      } catch (error) {
        data = {};
      }
      if (response.status === 401) {
        loggedOut(data);
        throw new Stop();
      }
      return { status: response.status, data: data };
    }
  }

  async function get(path) {
    const result = await request("GET", path);
    if (result.status !== 200) {
      say(result.data.message || "The server refused.");
      throw new Stop();
    }
    return result.data;
  }

  function pending() {
    try {
      const stored = window.sessionStorage.getItem(PENDING);
      return stored ? JSON.parse(stored) : null;
    } catch (error) {
      return null;
    }
  }

  function remember(action) {
    try {
      if (action) window.sessionStorage.setItem(PENDING, JSON.stringify(action));
      else window.sessionStorage.removeItem(PENDING);
    } catch (error) {
      /* a browser without storage: the action is still retried while the page is open */
    }
  }

  let sending = false;

  async function send(action) {
    /* One write, once: retried with the same key until the server answered it. */
    sending = true;
    body.classList.add("-sending");
    remember(action);
    try {
      const result = await request("POST", action.path, action.body, action.key, action.what);
      remember(null);
      return result;
    } finally {
      sending = false;
      body.classList.remove("-sending");
    }
  }

  function busy() {
    /* One action at a time: while one is being sent, or one waits for the person to log in
       again, nothing else is taken (it would stand in the other's place). */
    if (sending) {
      say("Still sending your last action; wait for it to be saved.");
      return true;
    }
    if (body.classList.contains("-logged-out") && pending()) {
      say("Log in again first: your last action is kept and sent then.");
      return true;
    }
    return false;
  }

  async function resume() {
    /* An action a reload, a lost connection or a login came between: sent now, with its key. */
    const action = pending();
    if (!action) return;
    const { status, data } = await send(action);
    if (status < 300) say("Your earlier " + action.what + " was saved.");
    else if (status === 409) say("Your earlier " + action.what + " was not saved: " + (data.message || "it changed meanwhile."));
    else say("Your earlier " + action.what + " was not saved: " + (data.message || "refused."));
  }

  // -- dialogs -----------------------------------------------------------------------------------

  let opener = null;

  function openDialog(dialog) {
    opener = document.activeElement;
    dialog.showModal();
  }

  function closed(dialog) {
    dialog.addEventListener("close", function () {
      if (opener && document.contains(opener)) opener.focus();
      opener = null;
    });
  }

  document.querySelectorAll("dialog").forEach(closed);

  function ask(title, label, value, ok, withText) {
    /* The note dialog: the text typed (null when cancelled). */
    const dialog = byId("note-dialog");
    const field = byId("note-text");
    byId("note-h").textContent = title;
    byId("note-label").textContent = label;
    byId("note-ok").textContent = ok;
    field.value = value || "";
    field.hidden = !withText;
    byId("note-label").hidden = !withText;
    return new Promise(function (resolve) {
      dialog.addEventListener("close", function once() {
        dialog.removeEventListener("close", once);
        resolve(dialog.returnValue === "ok" ? field.value : null);
      });
      dialog.returnValue = "";
      openDialog(dialog);
      if (withText) field.focus();
    });
  }

  function choose(text, mine, theirs) {
    /* The conflict dialog: true for "mine", false for "theirs". */
    const dialog = byId("conflict-dialog");
    byId("conflict-text").textContent = text;
    const mineButton = byId("conflict-mine");
    const theirsButton = byId("conflict-theirs");
    mineButton.textContent = mine;
    theirsButton.textContent = theirs;
    return new Promise(function (resolve) {
      function pick(choice) {
        return function () {
          mineButton.onclick = theirsButton.onclick = null;
          dialog.close();
          resolve(choice);
        };
      }
      mineButton.onclick = pick(true);
      theirsButton.onclick = pick(false);
      dialog.addEventListener("cancel", function once() {
        dialog.removeEventListener("cancel", once);
        resolve(false);
      });
      openDialog(dialog);
      theirsButton.focus();
    });
  }

  function help() {
    const dialog = byId("help-dialog");
    if (dialog && !dialog.open) openDialog(dialog);
  }

  function anyDialogOpen() {
    return Array.from(document.querySelectorAll("dialog")).some(function (d) { return d.open; });
  }

  function typing(target) {
    return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  function onKeys(handler) {
    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
      if (anyDialogOpen() || typing(event.target)) return;
      if (handler(event.key)) event.preventDefault();
    });
  }

  function onActions(handlers) {
    document.addEventListener("click", function (event) {
      const button = event.target.closest("button[data-action]");
      if (!button || !handlers[button.dataset.action]) return;
      handlers[button.dataset.action]();
    });
  }

  function query(params) {
    return new URLSearchParams(params).toString();
  }

  // -- the judging page --------------------------------------------------------------------------

  function judgePage() {
    const state = { pair: null, last: null, mine: [], shownAt: performance.now(), upcoming: null };
    const grades = Array.from(document.querySelectorAll("button.grade")).map(function (b) { return Number(b.dataset.grade); });
    const names = {};
    document.querySelectorAll("button.grade").forEach(function (b) {
      names[b.dataset.grade] = b.querySelector(".grade-name").textContent.trim();
    });
    const binary = grades.length === 2 && grades[0] === 0 && grades[1] === 1;

    function describe(label) {
      if (!label) return "no label";
      if (label.grade !== null && label.grade !== undefined) return names[label.grade] ? "grade " + names[label.grade] : "grade " + label.grade;
      if (label.skipped) return "a skip";
      return "no grade (undone)";
    }

    function where(pair) {
      return "query " + shown(pair.query.id) + ", chunk " + shown(pair.chunk.id);
    }

    function renderChunk(chunk) {
      const node = byId("chunk-text");
      node.textContent = "";
      (chunk.segments || [chunk.text]).forEach(function (piece, i) {
        if (!piece) return;
        node.append(i % 2 ? el("mark", { text: piece }) : document.createTextNode(shown(piece)));
      });
      setText("chunk-id", chunk.id);
      setText("chunk-doc", chunk.doc_id ? "in document " + chunk.doc_id : "");
      const heading = [chunk.title, chunk.section].filter(Boolean).join(" · ");
      setText("chunk-heading", heading);
    }

    function renderYours(pair) {
      const label = pair.label;
      let text = "No grade yet.";
      if (label && label.grade !== null) text = "You gave " + describe(label) + ".";
      else if (label && label.skipped) text = "You skipped this pair.";
      else if (label && label.undone) text = "No grade (your grade was undone).";
      byId("your-label").textContent = text;
      const marks = pair.marks;
      setText("your-flag", marks.flagged ? "Flagged for review" + (marks.flag_note ? ": " + marks.flag_note : ".") : "", true);
      setText("your-comment", marks.comment ? "Your comment: " + marks.comment : "", true);
      const review = pair.review;
      setText("review-answer", review ? (review.action === "resolve" ? "Resolved by " : "Sent back by ") + review.by + (review.note ? ": " + review.note : ".") : "", true);
      const flag = byId("flag-button");
      flag.querySelector("span").textContent = marks.flagged ? "Unflag" : "Flag";
      document.querySelectorAll("button.grade").forEach(function (b) {
        b.setAttribute("aria-pressed", label && label.grade === Number(b.dataset.grade) ? "true" : "false");
      });
    }

    function renderFacets(facets, nuggets) {
      const facetList = byId("facet-list");
      facetList.textContent = "";
      facets.forEach(function (facet) {
        const button = el("button", { type: "button", "aria-pressed": facet.covered ? "true" : "false", "data-facet": facet.id },
          [el("span", { "aria-hidden": "true", text: facet.covered ? "\u25a0 " : "\u25a1 " }), el("span", { class: "data", text: facet.name })]);
        button.addEventListener("click", function () { linkFacet(facet.id, !facet.covered); });
        facetList.append(el("li", {}, [button]));
      });
      const nuggetList = byId("nugget-list");
      nuggetList.textContent = "";
      nuggets.forEach(function (nugget) {
        const id = "nugget-support-" + nugget.id;
        const select = el("select", { id: id, "data-nugget": nugget.id });
        ["none", "partial", "full"].forEach(function (level) {
          const option = el("option", { value: level, text: level === "none" ? "no support" : level + " support" });
          option.selected = nugget.support === level;
          select.append(option);
        });
        select.addEventListener("change", function () { supportNugget(nugget.id, select.value); });
        const tags = (nugget.kind === "claim" ? "claim " : "") + (nugget.importance === "vital" ? "vital " : "");
        nuggetList.append(el("li", {}, [
          el("label", { for: id, class: "nugget-text" }, [
            el("span", { class: "tag", text: tags }), el("span", { class: "data", text: nugget.text })]),
          select]));
      });
    }

    function renderProgress(pair) {
      const p = pair.progress;
      const parts = ["pair " + p.pair + " of " + p.pairs + " in this query (" + p.judged + " judged)",
        "query " + p.query + " of " + p.queries];
      if (p.queue_pairs) parts.push(Math.floor((100 * p.queue_handled) / p.queue_pairs) + "% of your queue (" + p.queue_handled + "/" + p.queue_pairs + ")");
      else parts.push("your queue: counting\u2026");
      byId("progress").textContent = parts.join(" \u00b7 ");
    }

    function pairKey(pair) {
      return pair.query.id + "\u001f" + pair.chunk.id;
    }

    function prefetch(pair) {
      /* The pair after this one, asked for while the person reads: a grade then needs only its
         write before the next pair is on the page. */
      if (!pair) {
        state.upcoming = null;
        return;
      }
      const upcoming = { after: pairKey(pair), value: null };
      state.upcoming = upcoming;
      get("/api/v1/pairs/next?" + query({ after_query_id: pair.query.id, after_chunk_id: pair.chunk.id }))
        .then(function (data) { upcoming.value = { pair: data.pairs[0] || null }; })
        .catch(function () { upcoming.value = null; });
    }

    function prefetched(pair) {
      /* The next pair fetched ahead, when it is there and is not this very pair (at the end of
         the queue the pair after it wraps around to the first one still open: this one). */
      const upcoming = state.upcoming;
      if (!upcoming || upcoming.after !== pairKey(pair) || !upcoming.value) return null;
      if (upcoming.value.pair && pairKey(upcoming.value.pair) === pairKey(pair)) return null;
      return upcoming.value;
    }

    function render(pair) {
      byId("loading").hidden = true;
      if (!pair) {
        state.upcoming = null;
        state.pair = null;
        byId("pair").hidden = true;
        byId("done").hidden = false;
        byId("done").focus();
        return;
      }
      state.pair = state.last = pair;
      state.shownAt = performance.now();
      byId("done").hidden = true;
      byId("pair").hidden = false;
      setText("query-id", pair.query.id);
      setText("query-category", pair.query.category || "");
      setText("query-text", pair.query.text);
      setText("query-description", pair.query.description, true);
      setText("query-narrative", pair.query.narrative, true);
      renderChunk(pair.chunk);
      renderYours(pair);
      renderFacets(pair.facets, pair.nuggets);
      renderProgress(pair);
      body.dataset.pair = pairKey(pair);
      prefetch(pair);
    }

    async function refresh() {
      if (!state.pair) return;
      const data = await get("/api/v1/pairs/at?" + query({ query_id: state.pair.query.id, chunk_id: state.pair.chunk.id }));
      render(data.pair);
    }

    async function label(grade, skip) {
      const pair = state.pair;
      if (!pair || busy()) return;
      const what = skip ? "your skip" : "your " + (names[grade] ? "grade " + names[grade] : "grade " + grade);
      const ahead = prefetched(pair);
      await sendLabel({
        path: "/api/v1/labels", key: newKey(), what: what,
        body: {
          query_id: pair.query.id, chunk_id: pair.chunk.id, grade: skip ? null : grade, skip: skip,
          seen: pair.seen, duration_ms: Math.round(performance.now() - state.shownAt), advance: !ahead,
        },
      }, ahead);
    }

    function counted(next, pair) {
      /* The pair fetched ahead counted its query's and the queue's judged pairs before this
         label: one more now when this label handled a pair that was open. */
      if (!next || !pair || (pair.label && (pair.label.grade !== null || pair.label.skipped))) return next;
      const progress = Object.assign({}, next.progress);
      if (next.query.id === pair.query.id) progress.judged += 1;
      if (progress.queue_handled !== null) progress.queue_handled += 1;
      return Object.assign({}, next, { progress: progress });
    }

    async function sendLabel(action, ahead) {
      const { status, data } = await send(action);
      if (status === 201) {
        state.mine.push(data.event_id);
        const next = ahead && !action.body.advance ? counted(ahead.pair, state.pair) : data.next;
        say(action.what.replace(/^your /, "").replace(/^./, function (c) { return c.toUpperCase(); }) + " saved." + (next ? "" : " Every pair of your queue is judged."));
        render(next);
        return;
      }
      if (status === 409) return labelConflict(action, data.current);
      say(data.message || "The label was refused.");
    }

    async function labelConflict(action, current) {
      const wanted = action.body;
      const same = current && (wanted.skip ? current.skipped && current.grade === null : current.grade === wanted.grade);
      if (same) {  // what this page wanted is what the pair holds: nothing to choose
        say(action.what + " is already recorded.");
        const data = await get("/api/v1/pairs/next?" + query({ after_query_id: wanted.query_id, after_chunk_id: wanted.chunk_id }));
        render(data.pairs[0] || null);
        return;
      }
      const text = "Since this page showed the pair, " + describe(current) + " was recorded for it (in another tab, the app or a script). Keep that, or record " + action.what + " instead?";
      const mine = await choose(text, "Record " + action.what, "Keep " + describe(current));
      if (mine) {
        await sendLabel({ path: action.path, key: newKey(), what: action.what,
          body: Object.assign({}, wanted, { seen: current ? current.event_id : null, advance: true }) });
      } else {
        await refresh();
      }
    }

    async function undo(expect) {
      if (busy()) return;
      const mineTop = state.mine.length ? state.mine[state.mine.length - 1] : null;
      const action = { path: "/api/v1/labels/undo", key: newKey(), what: "your undo",
        body: { expect: expect === undefined ? mineTop : expect } };
      const { status, data } = await send(action);
      if (status === 409) {
        const current = data.current;
        const mine = await choose("Your newest label is " + describe(current) + " of query " + shown(current.query_id) + ", chunk " + shown(current.chunk_id) + ", recorded elsewhere (another tab, the app or a script) after the one this page recorded. Undo that one?", "Undo it", "Leave it");
        if (mine) {
          state.mine = [];
          await undo(current.event_id);
        }
        return;
      }
      if (status !== 200) {
        say(data.message || "The undo was refused.");
        return;
      }
      if (!data.undone) {
        say("Nothing to undo.");
        return;
      }
      if (state.mine.length && state.mine[state.mine.length - 1] === data.undone.undone_id) state.mine.pop();
      const back = data.undone.label;
      say("Undone: " + (back && back.grade !== null ? "back to " + describe(back) : "the pair is back") + ".");
      render(data.undone.pair);
    }

    async function move(step) {
      if (busy()) return;
      if (!state.pair) {
        if (step < 0 && state.last) {
          const data = await get("/api/v1/pairs/at?" + query({ query_id: state.last.query.id, chunk_id: state.last.chunk.id }));
          render(data.pair);
        }
        return;
      }
      const data = await get("/api/v1/pairs/at?" + query({ query_id: state.pair.query.id, chunk_id: state.pair.chunk.id, step: step }));
      if (!data.pair) {
        say(step > 0 ? "This is the last pair of your queue." : "This is the first pair of your queue.");
        return;
      }
      render(data.pair);
      say("Pair " + data.pair.progress.pair + " of query " + shown(data.pair.query.id) + ".");
    }

    async function mark(kind, text, clear, message) {
      const pair = state.pair;
      const action = { path: "/api/v1/marks", key: newKey(), what: "your " + kind,
        body: { query_id: pair.query.id, chunk_id: pair.chunk.id, kind: kind, text: text, clear: clear } };
      const { status, data } = await send(action);
      if (status !== 200) {
        say(data.message || "Refused.");
        return;
      }
      pair.marks = data.marks;
      renderYours(pair);
      say(message);
    }

    async function flag() {
      const pair = state.pair;
      if (!pair || busy()) return;
      if (pair.marks.flagged) {
        const note = pair.marks.flag_note ? " (your note: " + shown(pair.marks.flag_note) + ")" : "";
        if (await ask("Remove your flag?", "", "", "Remove flag", false) === null) return;
        await mark("flag", null, true, "Flag removed." + note);
        return;
      }
      const note = await ask("Flag this pair for review", "A note for your lead (optional): why it needs a second look", "", "Flag", true);
      if (note === null) return;
      await mark("flag", note.trim() || null, false, "Flagged for review.");
    }

    async function comment() {
      const pair = state.pair;
      if (!pair || busy()) return;
      const current = pair.marks.comment || "";
      const text = await ask("Comment on this pair", "Your comment (empty removes it)", current, "Save comment", true);
      if (text === null || (!text.trim() && !current)) return;
      await mark("comment", text.trim() || null, !text.trim(), text.trim() ? "Comment saved." : "Comment removed.");
    }

    async function facetWrite(path, payload, message) {
      const pair = state.pair;
      if (!pair || busy()) return false;
      const action = { path: path, key: newKey(), what: "your change to the facets and nuggets",
        body: Object.assign({ query_id: pair.query.id, chunk_id: pair.chunk.id }, payload) };
      const { status, data } = await send(action);
      if (status !== 200) {
        say(data.message || "Refused.");
        return false;
      }
      pair.facets = data.facets;
      pair.nuggets = data.nuggets;
      renderFacets(data.facets, data.nuggets);
      say(message);
      return true;
    }

    function linkFacet(id, covered) {
      facetWrite("/api/v1/facets/" + id + "/link", { covered: covered }, covered ? "The chunk covers this facet." : "The chunk does not cover this facet.").then(function () {
        const button = document.querySelector('button[data-facet="' + id + '"]');
        if (button) button.focus();
      });
    }

    function supportNugget(id, support) {
      facetWrite("/api/v1/nuggets/" + id + "/support", { support: support }, "Nugget support: " + support + ".").then(function () {
        const select = byId("nugget-support-" + id);
        if (select) select.focus();
      });
    }

    byId("add-facet").addEventListener("submit", function (event) {
      event.preventDefault();
      const field = byId("facet-name");
      facetWrite("/api/v1/facets", { name: field.value }, "Facet added.").then(function (ok) { if (ok) field.value = ""; });
    });

    byId("add-nugget").addEventListener("submit", function (event) {
      event.preventDefault();
      const field = byId("nugget-text");
      const importance = byId("nugget-vital").checked ? "vital" : "okay";
      facetWrite("/api/v1/nuggets", { text: field.value, importance: importance }, "Nugget added.").then(function (ok) { if (ok) field.value = ""; });
    });

    document.querySelectorAll("button.grade").forEach(function (button) {
      button.addEventListener("click", function () { label(Number(button.dataset.grade), false); });
    });

    onActions({
      skip: function () { label(null, true); },
      undo: function () { undo(); },
      flag: flag,
      comment: comment,
      next: function () { move(1); },
      previous: function () { move(-1); },
      help: help,
    });

    onKeys(function (key) {
      if (/^[0-9]$/.test(key)) {
        const grade = Number(key);
        if (grades.includes(grade)) label(grade, false);
        else say(key + " is not on this project's scale.");
        return true;
      }
      if (binary && (key === "y" || key === "n")) {
        label(key === "y" ? 1 : 0, false);
        return true;
      }
      const actions = {
        s: function () { label(null, true); }, u: function () { undo(); }, f: flag, c: comment,
        j: function () { move(1); }, k: function () { move(-1); }, "?": help,
        g: function () { byId("facets-h").focus(); },
        l: function () { window.location.assign(base + "/history"); },
        h: function () { window.location.assign(base + "/guidelines"); },
      };
      if (!actions[key]) return false;
      actions[key]();
      return true;
    });

    async function start() {
      await resume();
      const news = (await get("/api/v1/news")).news;
      if (news.length) {
        const list = byId("news-list");
        news.forEach(function (item) {
          const answer = item.resolved || (item.reviews.length ? item.reviews[item.reviews.length - 1] : null);
          const verb = answer && answer.action === "send-back" ? "sent back" : "resolved";
          list.append(el("li", { class: "data", text: item.query_id + " / " + item.chunk_id + ": " + verb + (answer ? " by " + answer.by + (answer.note ? ": " + answer.note : "") : "") }));
        });
        byId("news").hidden = false;
      }
      const params = new URLSearchParams(window.location.search);
      if (params.get("query_id") && params.get("chunk_id")) {  // a pair chosen from your labels
        const asked = await request("GET", "/api/v1/pairs/at?" + query({ query_id: params.get("query_id"), chunk_id: params.get("chunk_id") }));
        if (asked.status === 200 && asked.data.pair) {
          render(asked.data.pair);
          return;
        }
        say((asked.data.message || "That pair is not in your queue.") + " Here is the next pair to judge.");
      }
      const data = await get("/api/v1/pairs/next");
      if (data.empty) byId("done-text").textContent = "There is nothing to judge here: no query has retrieved chunks in this pool yet. Ask your lead to import a run.";
      render(data.pairs[0] || null);
    }

    start().catch(function (error) { if (!(error instanceof Stop)) throw error; });
  }

  // -- the answers page --------------------------------------------------------------------------

  function answersPage() {
    const state = { answer: null, index: 0, shownAt: performance.now() };
    const WORDS = { full: "full support", partial: "partial support", none: "no support" };
    const MARKS = { full: "\u25cf", partial: "\u25d0", none: "\u25cb" };

    function itemName(answer, i) {
      const item = answer.items[i];
      const nuggets = answer.items.filter(function (x) { return x.nugget_id !== null; });
      if (item.nugget_id !== null) return "nugget " + (i + 1) + " of " + nuggets.length;
      const cites = answer.items.length - nuggets.length;
      return "citation " + (i - nuggets.length + 1) + " of " + cites;
    }

    function renderItemWhat(answer) {
      const item = answer.items[state.index];
      const node = byId("item-what");
      if (!item) {
        node.textContent = "This answer has nothing to judge (no nuggets, no citations).";
        return;
      }
      const judged = item.support ? "your judgment: " + WORDS[item.support] : "not judged yet";
      if (item.nugget_id !== null) {
        node.textContent = "Nugget " + itemName(answer, state.index).slice(7) + (item.vital ? " (vital)" : "") + ": \u201c" + shown(item.nugget) + "\u201d \u2014 does the whole answer support it? (" + judged + ")";
      } else {
        const sentence = answer.sentences[item.sentence];
        node.textContent = "Citation " + itemName(answer, state.index).slice(9) + ": does chunk " + shown(item.chunk_id) + " support sentence " + (item.sentence + 1) + ", \u201c" + shown(sentence ? sentence.text : "") + "\u201d? (" + judged + ")";
      }
      document.querySelectorAll("button.support").forEach(function (b) {
        b.setAttribute("aria-pressed", item.support === b.dataset.support ? "true" : "false");
      });
    }

    function renderCited(answer) {
      const item = answer.items[state.index];
      const chunk = item && item.chunk_id !== null ? answer.chunks[item.chunk_id] : null;
      const section = byId("cited-text").closest("section");
      if (!chunk) {
        section.hidden = true;
        return;
      }
      section.hidden = false;
      setText("cited-id", chunk.id);
      setText("cited-heading", [chunk.title, chunk.section].filter(Boolean).join(" \u00b7 "));
      const node = byId("cited-text");
      node.textContent = "";
      chunk.segments.forEach(function (piece, i) {
        if (piece) node.append(i % 2 ? el("mark", { text: piece }) : document.createTextNode(shown(piece)));
      });
    }

    function render(answer) {
      byId("loading").hidden = true;
      if (!answer) {
        state.answer = null;
        byId("answer").hidden = true;
        byId("done").hidden = false;
        byId("done").focus();
        return;
      }
      state.answer = answer;
      state.index = Math.min(state.index, Math.max(answer.items.length - 1, 0));
      byId("done").hidden = true;
      byId("answer").hidden = false;
      setText("query-id", answer.query.id);
      setText("query-text", answer.query.text);
      setText("query-description", answer.query.description, true);
      setText("answer-position", "(answer " + (answer.position + 1) + " of " + answer.count + ")");
      const current = answer.items[state.index] || {};
      const nuggetList = byId("nugget-items");
      nuggetList.textContent = "";
      answer.items.forEach(function (item, i) {
        if (item.nugget_id === null) return;
        nuggetList.append(el("li", { "aria-current": i === state.index ? "true" : null }, [
          el("span", { class: "support-mark", "aria-hidden": "true", text: item.support ? MARKS[item.support] : "\u00b7" }),
          el("span", { class: "data", text: (item.vital ? "vital: " : "") + item.nugget }),
          el("span", { class: "visually-hidden", text: " (" + (item.support ? WORDS[item.support] : "not judged yet") + ")" })]));
      });
      if (!nuggetList.children.length) nuggetList.append(el("li", { class: "hint", text: "No nuggets for this query." }));
      const sentences = byId("sentences");
      sentences.textContent = "";
      answer.sentences.forEach(function (sentence, i) {
        const cites = sentence.citations.map(function (chunkId) {
          const on = current.sentence === i && current.chunk_id === chunkId;
          return el("span", { class: "cite" + (on ? " current" : ""), text: "[" + chunkId + "]" });
        });
        sentences.append(el("li", { "aria-current": current.sentence === i ? "true" : null },
          [el("span", { class: "data", text: sentence.text })].concat(cites)));
      });
      renderItemWhat(answer);
      renderCited(answer);
      const p = answer.progress;
      byId("progress").textContent = "answer " + (answer.position + 1) + " of " + answer.count + " \u00b7 " + p.open_items + " left to judge in this answer \u00b7 " + p.answers_done + " of " + p.answers + " answers judged";
      body.dataset.item = String(state.index);
    }

    async function judge(support) {
      const answer = state.answer;
      if (!answer || busy()) return;
      const item = answer.items[state.index];
      if (!item) return;
      const name = itemName(answer, state.index);
      const payload = { support: support, duration_ms: Math.round(performance.now() - state.shownAt) };
      if (item.nugget_id !== null) payload.nugget_id = item.nugget_id;
      else Object.assign(payload, { sentence: item.sentence, chunk_id: item.chunk_id });
      const { status, data } = await send({ path: "/api/v1/answers/" + answer.answer_id + "/judgments", key: newKey(), what: "your judgment of " + name, body: payload });
      if (status !== 201) {
        say(data.message || "Refused.");
        return;
      }
      const last = state.index >= data.answer.items.length - 1;
      if (!last) state.index += 1;
      state.shownAt = performance.now();
      render(data.answer);
      say(WORDS[support].replace(/^./, function (c) { return c.toUpperCase(); }) + " saved for " + name + "." + (last ? " That was the last item of this answer; ] for the next answer." : ""));
    }

    function moveItem(step) {
      const answer = state.answer;
      if (!answer) return;
      const next = state.index + step;
      if (next < 0 || next >= answer.items.length) {
        say(step > 0 ? "This is the last item of this answer." : "This is the first item of this answer.");
        return;
      }
      state.index = next;
      render(answer);
    }

    async function moveAnswer(step) {
      const answer = state.answer;
      if (!answer || busy()) return;
      const position = answer.position + step;
      if (position < 0 || position >= answer.count) {
        say(step > 0 ? "This is the last answer." : "This is the first answer.");
        return;
      }
      const data = await get("/api/v1/answers/at?" + query({ position: position }));
      state.index = Math.max(0, data.answer.items.findIndex(function (item) { return !item.support; }));
      render(data.answer);
      say("Answer " + (position + 1) + " of " + answer.count + ".");
    }

    async function undo() {
      if (busy()) return;
      const { status, data } = await send({ path: "/api/v1/answers/undo", key: newKey(), what: "your undo", body: {} });
      if (status !== 200) {
        say(data.message || "Refused.");
        return;
      }
      if (!data.undone) {
        say("Nothing to undo.");
        return;
      }
      const undone = data.undone;
      if (undone.answer) {
        const i = undone.answer.items.findIndex(function (item) {
          return item.nugget_id === undone.nugget_id && item.sentence === undone.sentence && item.chunk_id === undone.chunk_id;
        });
        state.index = Math.max(0, i);
        render(undone.answer);
      }
      say("Undone.");
    }

    document.querySelectorAll("button.support").forEach(function (button) {
      button.addEventListener("click", function () { judge(button.dataset.support); });
    });

    onActions({
      "item-next": function () { moveItem(1); },
      "item-previous": function () { moveItem(-1); },
      "answer-next": function () { moveAnswer(1); },
      "answer-previous": function () { moveAnswer(-1); },
      undo: undo,
      help: help,
    });

    onKeys(function (key) {
      const levels = { 2: "full", f: "full", 1: "partial", p: "partial", 0: "none", x: "none" };
      if (levels[key]) {
        judge(levels[key]);
        return true;
      }
      const actions = {
        j: function () { moveItem(1); }, ArrowDown: function () { moveItem(1); },
        k: function () { moveItem(-1); }, ArrowUp: function () { moveItem(-1); },
        "]": function () { moveAnswer(1); }, "[": function () { moveAnswer(-1); },
        u: undo, "?": help,
      };
      if (!actions[key]) return false;
      actions[key]();
      return true;
    });

    async function start() {
      await resume();
      const data = await get("/api/v1/answers/next");
      if (data.answer) state.index = Math.max(0, data.answer.items.findIndex(function (item) { return !item.support; }));
      render(data.answer);
    }

    start().catch(function (error) { if (!(error instanceof Stop)) throw error; });
  }

  // -- the lead's terminal -------------------------------------------------------------------------

  function terminalPage() {
    /* The terminal's websocket: this page's own address (ws: or wss: as the page came), so the
       page works as well behind a reverse proxy. textual.js connects once the page has loaded. */
    const terminal = byId("terminal");
    const url = new URL(terminal.dataset.socketPath, window.location.href);
    url.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";
    url.search = "";
    terminal.dataset.sessionWebsocketUrl = url.toString();
    const here = new URL(window.location.href);
    if (here.searchParams.has("ping")) {  // textual.js would fetch it; this page fetches nothing else
      here.searchParams.delete("ping");
      window.history.replaceState(null, "", here.toString());
    }
    const status = byId("terminal-status");
    new MutationObserver(function () {
      if (body.classList.contains("-closed")) status.textContent = "The terminal session ended (you logged out, your token changed, or the server stopped). Reload the page to start a new one.";
    }).observe(body, { attributes: true, attributeFilter: ["class"] });
  }

  if (pageName === "judge") judgePage();
  else if (pageName === "answers") answersPage();
  else if (pageName === "terminal") terminalPage();
})();
