// The relay example end to end in headless Chromium: examples/sync-status with its two replicas,
// the page open on replica b for five members, 50 sync events published, replica a killed half-way.
// Every panel must leave "syncing" and end on its member's last event, whichever replica handled
// it. The relay orders each member's statuses by event: the page receives them in increasing
// event order, each at most once; a status missing is one superseded (a newer event of its member
// reached the page first, as when replica a's held event is handled by b after ack_wait). A page
// opened at the end is handed each member's newest event.
//
//   node sync_status_test.mjs /path/to/sync-status          (or SYNC_STATUS=/path/to/sync-status)
//
// Prints one summary line and exits 0, or names the failed check and exits 1. Exits 77 (skip) when
// Chromium or playwright-core is missing and CI is not set. NATSFLEET_SCREENSHOT=file.png saves
// replica b's page once every panel shows its last status.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import readline from 'node:readline';

const CHROMIUM = '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 20000;
// The example's work ack_wait (replica.cc): an event replica a held unacked when it died returns to
// replica b after it. Waits that may include such a takeover allow for it.
const ACK_WAIT_MS = 5000;
const OVERALL_TIMEOUT_MS = 150000;
const MEMBERS = ['alice', 'bob', 'carol', 'dave', 'erin'];
const EVENTS = 50;
const SETTLED_BEFORE_KILL = 20;  // handled and shown before replica a is killed
const IN_FLIGHT_AT_KILL = 5;     // published just before the kill, without waiting

class CheckFailed extends Error {}

let checks = 0;
function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
  checks += 1;
}

function skipOrFail(missing) {
  if (process.env.CI) {
    console.error(`sync-status browser test: ${missing}; scripts/install-deps.sh installs it`);
    process.exit(1);
  }
  console.log(`sync-status browser test: skipped: ${missing}`);
  process.exit(77);
}

// The events, fixed so that a failure points at the same event every run: members get uneven
// shares, every "synced" carries a message count no other event has, and the last five events
// (one per member, after the kill) leave the page in mixed states.
function planEvents() {
  const failures = ['IMAP login refused', 'Mailbox quota exceeded', 'TLS certificate expired',
    'Connection to imap.example.net timed out', 'Folder INBOX is locked'];
  let seed = 0x5eed;
  const random = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed / 2 ** 32;
  };
  const events = [];
  for (let i = 0; i < EVENTS - MEMBERS.length; ++i) {
    const member = MEMBERS[Math.floor(random() * MEMBERS.length)];
    if (i % 7 === 3) events.push({ member, error: failures[i % failures.length] });
    else events.push({ member, messages: 2 + ((i * 37) % 211) });
  }
  events.push({ member: 'alice', messages: 1284 });
  events.push({ member: 'bob', error: 'Mailbox quota exceeded' });
  events.push({ member: 'carol', messages: 1 });
  events.push({ member: 'dave', error: 'IMAP login refused' });
  events.push({ member: 'erin', messages: 318 });
  return events;
}

// The sync-status launcher in a process group of its own (it, both replicas and the embedded
// nats-server), so that the whole tree can be killed whatever state it is left in.
class Launcher {
  constructor(binary, args) {
    this.lines = [];
    this.waiters = [];
    this.tail = [];  // the last lines of its output, for a failure message
    this.exit = null;
    this.child = spawn(binary, args, { detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exit = signal ? `signal ${signal}` : `exit code ${code}`;
        resolve();
        this.wake();
      });
      this.child.on('error', (error) => {
        this.exit = `not started: ${error.message}`;
        resolve();
        this.wake();
      });
    });
    this.child.stdin.on('error', () => {});  // it exited: the exit status tells why
    for (const stream of [this.child.stdout, this.child.stderr]) {
      readline.createInterface({ input: stream }).on('line', (line) => this.onLine(line, stream));
    }
  }

  onLine(line, stream) {
    this.tail.push(line);
    if (this.tail.length > 30) this.tail.shift();
    if (stream === this.child.stdout) {
      this.lines.push(line);
      this.wake();
    }
  }

  wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  send(text) {
    this.child.stdin.write(`${text}\n`);
  }

  // The first unread line that matches, waiting for it up to `timeoutMs`.
  async next(pattern, what, timeoutMs = STEP_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.lines.findIndex((line) => pattern.test(line));
      if (index >= 0) return this.lines.splice(index, 1)[0].match(pattern);
      if (this.exit) throw new CheckFailed(`sync-status ended (${this.exit}) before ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new CheckFailed(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, left);
      });
    }
  }

  killGroup(signal) {
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // the group is gone already
    }
  }

  // "quit" first, so the replicas and the broker stop cleanly; then signals.
  async stop() {
    if (this.child.pid === undefined) return;
    const within = (ms) => Promise.race([this.exited, new Promise((r) => setTimeout(r, ms))]);
    if (!this.exit) {
      this.child.stdin.end('quit\n');
      await within(10000);
    }
    if (!this.exit) {
      this.killGroup('SIGTERM');
      await within(3000);
    }
    this.killGroup('SIGKILL');  // anything of the tree still there, the launcher gone or not
    await within(3000);
  }
}

function panel(member) {
  return `.panel[data-member="${member}"]`;
}

async function panelData(page, member) {
  return page.$eval(panel(member), (el) => ({ ...el.dataset })).catch(() => null);
}

async function waitForPanel(page, member, wanted, what, timeoutMs = STEP_TIMEOUT_MS) {
  try {
    await page.waitForFunction(
      ({ selector, attributes }) => {
        const el = document.querySelector(selector);
        return !!el && Object.entries(attributes).every(([k, v]) => el.dataset[k] === v);
      },
      { selector: panel(member), attributes: wanted },
      { timeout: timeoutMs, polling: 100 },
    );
  } catch {
    const seen = JSON.stringify(await panelData(page, member)) ?? 'no panel';
    throw new CheckFailed(`${what}: wanted ${JSON.stringify(wanted)} within ${timeoutMs} ms, ` +
      `panel has ${seen}`);
  }
  checks += 1;
}

async function panelText(page, member, part) {
  return page.$eval(`${panel(member)} ${part}`, (el) => el.textContent.trim());
}

// Publishes `events` (all commands written at once, then `andThen`) and notes their stream
// sequences.
async function publish(launcher, events, andThen) {
  for (const e of events) {
    launcher.send(`event ${e.member} ${e.error ? `error ${e.error}` : e.messages}`);
  }
  if (andThen) launcher.send(andThen);
  for (const e of events) {
    const [line, seq, member] = await launcher.next(/^(?:published (\d+) (\S+)|error .*)$/,
      `the launcher to publish ${e.member}'s event`);
    check(seq !== undefined, `the launcher published ${e.member}'s event, not "${line}"`);
    check(member === e.member, `published in order: ${member}'s event where ${e.member}'s was due`);
    e.seq = Number(seq);
  }
}

async function run(chromium, launcher) {
  const events = planEvents();
  const [, brokerUrl] = await launcher.next(/^broker (\S+)$/, 'the broker');
  const [, urlA] = await launcher.next(/^replica a (\S+)$/, 'replica a');
  const [, urlB] = await launcher.next(/^replica b (\S+)$/, 'replica b');
  await launcher.next(/^ready: /, 'the ready line');
  for (const url of [brokerUrl, urlA, urlB]) {
    check(/^(nats|http):\/\/127\.0\.0\.1:\d+/.test(url), `${url} is on the loopback interface`);
  }
  check(new URL(urlB).searchParams.get('members') === MEMBERS.join(','),
    `replica b's address names the five members (${urlB})`);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1000, height: 640 } });
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    // Every status the page receives, from the WebSocket frames: which event, which replica.
    const received = [];
    page.on('websocket', (ws) => {
      const member = new URL(ws.url()).searchParams.get('member');
      ws.on('framereceived', ({ payload }) => {
        let status;
        try {
          status = JSON.parse(String(payload));
        } catch {
          return;
        }
        if (status && typeof status === 'object' && status.type !== 'ping') {
          received.push({ member, status, at: Date.now() });
        }
      });
    });

    await page.goto(urlB);
    for (const member of MEMBERS) {
      await waitForPanel(page, member, { state: 'syncing', count: '0', connection: 'open' },
        `${member}'s panel on replica b before any event`);
    }

    // Events handled by both replicas while both are up.
    const settled = events.slice(0, SETTLED_BEFORE_KILL);
    await publish(launcher, settled);
    await waitForNewest(received, settled, STEP_TIMEOUT_MS, 'the events before the kill');
    const before = new Set(settled.map((e) => handledBy(received, e)).filter(Boolean));
    check(before.has('a') && before.has('b'),
      `both replicas handled events before the kill (only ${[...before].join(', ')})`);
    for (const member of MEMBERS) {
      const mine = settled.filter((e) => e.member === member);
      if (mine.length === 0) continue;
      const got = received.filter((r) => r.member === member).length;
      const wanted = { ...shown(mine.at(-1), received), count: String(got) };
      await waitForPanel(page, member, wanted, `${member}'s panel before the kill`);
    }

    // A few more, and replica a dies the moment the last is stored, with whatever it holds.
    const inFlight = events.slice(SETTLED_BEFORE_KILL, SETTLED_BEFORE_KILL + IN_FLIGHT_AT_KILL);
    await publish(launcher, inFlight, 'kill a');
    await launcher.next(/^killed a$/, 'replica a to be killed');
    const killedAt = Date.now();

    // The rest with replica b alone; the page on b keeps updating.
    const after = events.slice(SETTLED_BEFORE_KILL + IN_FLIGHT_AT_KILL);
    await publish(launcher, after);
    await waitForNewest(received, [...inFlight, ...after], STEP_TIMEOUT_MS + ACK_WAIT_MS,
      'the events after the kill');
    for (const e of after) {
      // A status can be superseded on its way by a newer one of its member; the page may then
      // never get it. What it did get, b handled.
      const by = handledBy(received, e);
      if (by === undefined && supersededOnPage(received, e)) continue;
      check(by === 'b', `event ${e.seq} (${e.member}), published after the kill, handled by b, ` +
        `not ${by}`);
    }

    // Each panel: its member's last event shown.
    for (const member of MEMBERS) {
      const mine = events.filter((e) => e.member === member);
      check(mine.length > 0, `${member} has events`);
      const last = mine.at(-1);
      await waitForPanel(page, member, { ...shown(last, received) },
        `${member}'s panel after event ${last.seq}`);
      const detail = await panelText(page, member, '.detail');
      const wanted = last.error ? last.error
        : `· ${last.messages} ${last.messages === 1 ? 'message' : 'messages'}`;
      check(last.error ? detail === wanted : detail.endsWith(wanted),
        `${member}'s panel reads "${wanted}", not "${detail}"`);
      const origin = await panelText(page, member, '.handled-by');
      check(origin === `Handled by replica ${handledBy(received, last)}`,
        `${member}'s panel names the replica that handled event ${last.seq} ("${origin}")`);
    }
    // An event a handled but did not ack before it died returns to b after ack_wait, and b
    // publishes its status again: that must not reach the page a second time. Count after it.
    const redeliveredBy = killedAt + ACK_WAIT_MS + 2000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, redeliveredBy - Date.now())));
    const seqs = new Set(events.map((e) => e.seq));
    check(seqs.size === events.length, `${events.length} distinct stream sequences`);
    for (const { member, status } of received) {
      check(seqs.has(status.event), `${member} received a status for an event never published ` +
        `(${JSON.stringify(status)})`);
    }
    let superseded = 0;
    for (const e of events) {
      const statuses = received.filter(({ status }) => status.event === e.seq);
      check(statuses.length <= 1,
        `event ${e.seq} (${e.member}) reached the page at most once, not ${statuses.length} times`);
      if (statuses.length === 0) {
        superseded += 1;
        check(received.some(({ member, status }) => member === e.member && status.event > e.seq),
          `event ${e.seq} (${e.member}) reached the page, or a newer event of ${e.member} did`);
        continue;
      }
      check(statuses[0].member === e.member && statuses[0].status.member === e.member,
        `event ${e.seq}'s status went to ${e.member}'s panel only`);
    }
    for (const member of MEMBERS) {
      const order = received.filter((r) => r.member === member).map(({ status }) => status.event);
      check(order.every((event, i) => i === 0 || order[i - 1] < event),
        `${member}'s statuses reached the page in event order (${order.join(', ')})`);
      const count = order.length;
      const data = await panelData(page, member);
      check(data.count === String(count),
        `${member}'s panel counts ${count} statuses, not ${data.count}`);
      check(data.connection === 'open', `${member}'s panel is still connected to b`);
    }
    check(pageErrors.length === 0, `the page raised no errors (${pageErrors.join('; ')})`);

    // A page opened now is handed each member's newest event, not the last status published.
    const late = await context.newPage();
    await late.goto(urlB);
    for (const member of MEMBERS) {
      const last = events.filter((e) => e.member === member).at(-1);
      await waitForPanel(late, member, { ...shown(last, received), count: '1' },
        `${member}'s panel on a page opened after the last event`);
    }
    await late.close();

    if (process.env.NATSFLEET_SCREENSHOT) {
      await page.screenshot({ path: process.env.NATSFLEET_SCREENSHOT, fullPage: true });
    }
    const byA = events.filter((e) => handledBy(received, e) === 'a').length;
    const byB = events.filter((e) => handledBy(received, e) === 'b').length;
    // Events a held when it died, whose statuses came from b once their ack_wait ran out.
    const takenOver = inFlight.filter((e) => received.some(({ status, at }) =>
      status.event === e.seq && status.handled_by === 'b' && at >= killedAt + ACK_WAIT_MS / 2))
      .length;
    console.log(`sync-status page: ${checks} checks passed in Chromium ${browser.version()} ` +
      `(${MEMBERS.length} members on replica b, ${events.length} events: ${byA} handled by a, ` +
      `${byB} by b; a killed after ${SETTLED_BEFORE_KILL + IN_FLIGHT_AT_KILL}, ` +
      `${takenOver} of its events taken over after ack_wait, ${superseded} statuses superseded)`);
  } finally {
    await browser.close();
  }
}

function handledBy(received, event) {
  return received.find(({ status }) => status.event === event.seq)?.status.handled_by;
}

// Whether the page received a status of `event`'s member for a later event.
function supersededOnPage(received, event) {
  return received.some(({ member, status }) => member === event.member && status.event > event.seq);
}

// What a panel's data attributes say while `event` is the newest it has had.
function shown(event, received) {
  return { state: event.error ? 'failed' : 'synced', handledBy: handledBy(received, event) ?? '?' };
}

// Waits until the page has received a status for each member's newest event of `events` (an older
// one may be superseded).
async function waitForNewest(received, events, timeoutMs, what) {
  const newest = MEMBERS.map((m) => events.filter((e) => e.member === m).at(-1)).filter(Boolean);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const missing = newest.filter((e) => !received.some(({ status }) => status.event === e.seq));
    if (missing.length === 0) break;
    if (Date.now() > deadline) {
      throw new CheckFailed(`${what}: no status within ${timeoutMs} ms for ` +
        missing.map((e) => `event ${e.seq} (${e.member})`).join(', '));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  checks += 1;
}

async function main() {
  const binary = process.argv[2] || process.env.SYNC_STATUS;
  if (!binary || !existsSync(binary)) {
    console.error(`sync-status browser test: no sync-status binary at '${binary ?? ''}' ` +
      '(pass its path as the argument or in SYNC_STATUS)');
    process.exit(1);
  }
  if (!existsSync(CHROMIUM)) skipOrFail(`${CHROMIUM} is not installed`);
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    skipOrFail('playwright-core is not installed in tests/browser (npm ci --prefix tests/browser)');
  }

  const launcher = new Launcher(binary, ['--ports', '0,0', '--members', MEMBERS.join(',')]);
  // Whatever happens, nothing of the tree outlives the test: stopped in order when there is time,
  // killed when there is none.
  process.on('exit', () => launcher.killGroup('SIGKILL'));
  const abandon = (why) => {
    console.error(`sync-status page test FAILED after ${checks} checks: ${why}`);
    setTimeout(() => process.exit(1), 5000).unref();
    launcher.stop().finally(() => process.exit(1));
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => abandon(signal));
  const overall = setTimeout(() => abandon(`not finished within ${OVERALL_TIMEOUT_MS} ms`),
    OVERALL_TIMEOUT_MS);

  let failure = null;
  try {
    await run(chromium, launcher);
  } catch (error) {
    failure = error;
  }
  await launcher.stop();
  clearTimeout(overall);
  if (failure) {
    const message = failure instanceof CheckFailed ? failure.message
      : (failure.stack || String(failure));
    console.error(`sync-status page test FAILED after ${checks} checks: ${message}`);
    console.error(`last lines from sync-status:\n  ${launcher.tail.join('\n  ')}`);
    process.exit(1);
  }
  process.exit(0);
}

main();
