// The member status page in headless Chromium, against a live relay gateway. Run by
// gateway_fixture, which serves the page and delivers statuses when this script asks (commands
// on stdout, answers on stdin: see gateway_fixture.cc).
//
//   GATEWAY_URL=http://127.0.0.1:PORT/ node gateway_page_test.mjs      (or the URL as argv[2])
//
// Prints one summary line and exits 0, or names the failed check and exits 1.
// SCREENSHOT=file.png saves the page showing a synced, a failed and a syncing member.
import { existsSync } from 'node:fs';
import readline from 'node:readline';
import { chromium } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 10000;

const gatewayUrl = process.env.GATEWAY_URL || process.argv[2];
let checks = 0;

class CheckFailed extends Error {}

function check(condition, message) {
  if (!condition) throw new CheckFailed(message);
  checks += 1;
}

// Lines from the fixture, consumed in order by whoever waits for them.
const lines = [];
let lineWaiters = [];
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  lines.push(line);
  const waiters = lineWaiters;
  lineWaiters = [];
  for (const wake of waiters) wake();
});

async function nextLine(matches, what) {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (;;) {
    const index = lines.findIndex(matches);
    if (index >= 0) return lines.splice(index, 1)[0];
    const left = deadline - Date.now();
    if (left <= 0) throw new CheckFailed(`timed out waiting for ${what}`);
    await new Promise((resolve) => {
      lineWaiters.push(resolve);
      setTimeout(resolve, left);
    });
  }
}

function command(text) {
  process.stdout.write(`@fixture ${text}\n`);
}

async function attached(members) {
  for (const member of members) {
    await nextLine((l) => l === `attached ${member}`, `${member}'s session to attach`);
  }
}

async function deliver(member, status) {
  command(`deliver ${member} ${JSON.stringify(status)}`);
  const answer = await nextLine((l) => l.startsWith(`delivered ${member} `), `delivery to ${member}`);
  return Number(answer.split(' ')[2]);
}

function panel(member) {
  return `.panel[data-member="${member}"]`;
}

async function waitForPanel(page, member, attributes, what) {
  try {
    await page.waitForFunction(
      ({ selector, wanted }) => {
        const el = document.querySelector(selector);
        return !!el && Object.entries(wanted).every(([k, v]) => el.dataset[k] === v);
      },
      { selector: panel(member), wanted: attributes },
      { timeout: STEP_TIMEOUT_MS },
    );
  } catch {
    const seen = await page
      .$eval(panel(member), (el) => JSON.stringify(el.dataset))
      .catch(() => 'no panel');
    throw new CheckFailed(`${what}: wanted ${JSON.stringify(attributes)}, panel has ${seen}`);
  }
  checks += 1;
}

async function panelText(page, member, part) {
  return page.$eval(`${panel(member)} ${part}`, (el) => el.textContent.trim());
}

async function main() {
  if (!gatewayUrl) throw new CheckFailed('no gateway URL: set GATEWAY_URL or pass it as an argument');
  if (!existsSync(CHROMIUM)) throw new CheckFailed(`${CHROMIUM} is not installed`);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1000, height: 420 } });
    const pageErrors = [];
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));

    // Three members on one page: every panel starts syncing, each with its own session.
    const members = ['alice', 'bob', 'carol_d@example'];
    await page.goto(`${gatewayUrl}?members=${members.map(encodeURIComponent).join(',')}`);
    await attached(members);
    for (const member of members) {
      await waitForPanel(page, member, { state: 'syncing', count: '0', connection: 'open' },
        `${member} before any status`);
      check((await panelText(page, member, '.label')) === 'Syncing…', `${member} says Syncing…`);
    }

    // A status reaches its own member's panel and nobody else's.
    const at = '2026-11-30T01:02:03Z';
    check(await deliver('alice', { member: 'alice', state: 'synced', at, messages: 42 }) === 1,
      'the relay reached alice\'s one session');
    await waitForPanel(page, 'alice', { state: 'synced', count: '1' }, 'alice after her status');
    const localTime = await page.evaluate((iso) => {
      const when = new Date(iso);
      return when.toDateString() === new Date().toDateString()
        ? when.toLocaleTimeString() : when.toLocaleString();
    }, at);
    const aliceDetail = await panelText(page, 'alice', '.detail');
    check(aliceDetail === `Synced at ${localTime} · 42 messages`,
      `alice's panel reads "Synced at ${localTime} · 42 messages", not "${aliceDetail}"`);
    for (const member of ['bob', 'carol_d@example']) {
      await waitForPanel(page, member, { state: 'syncing', count: '0' }, `${member} untouched`);
    }

    // A failure is shown with its reason.
    check(await deliver('bob', { member: 'bob', state: 'failed', error: 'mailbox quota exceeded' })
      === 1, 'the relay reached bob\'s session');
    await waitForPanel(page, 'bob', { state: 'failed', count: '1' }, 'bob after his failure');
    check((await panelText(page, 'bob', '.detail')) === 'mailbox quota exceeded',
      'bob\'s panel shows the error');

    // Progress, then done: the count follows every status.
    const carol = 'carol_d@example';
    await deliver(carol, { member: carol, state: 'syncing' });
    await waitForPanel(page, carol, { state: 'syncing', count: '1' }, 'carol while syncing');
    check((await panelText(page, carol, '.detail')) === 'A sync is running.', 'carol is syncing');
    // All three states on one page.
    if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT });
    await deliver(carol, { member: carol, state: 'synced', at: new Date().toISOString(), messages: 1 });
    await waitForPanel(page, carol, { state: 'synced', count: '2' }, 'carol after two statuses');
    check((await panelText(page, carol, '.detail')).endsWith('· 1 message'), 'carol: 1 message');
    await waitForPanel(page, 'alice', { state: 'synced', count: '1' }, 'alice untouched by carol');

    // A second tab of the same member: one status reaches both.
    const second = await context.newPage();
    second.on('pageerror', (error) => pageErrors.push(error.message));
    await second.goto(`${gatewayUrl}?member=alice`);
    await attached(['alice']);
    // A page opened late shows the member's last status at once, not "syncing".
    await waitForPanel(second, 'alice', { state: 'synced', count: '1', connection: 'open' },
      'alice\'s second tab shows her last status on attach');
    check(await deliver('alice', { member: 'alice', state: 'synced', at, messages: 43 }) === 2,
      'the relay reached both of alice\'s sessions');
    await waitForPanel(page, 'alice', { state: 'synced', count: '2' }, 'alice, first tab');
    await waitForPanel(second, 'alice', { state: 'synced', count: '2' }, 'alice, second tab');
    await second.close();

    // The relay goes away and comes back: panels say so, keep what they know, and reattach.
    command('stop');
    await nextLine((l) => l === 'stopped', 'the gateway to stop');
    for (const member of members) {
      await waitForPanel(page, member, { connection: 'reconnecting' }, `${member} while the relay is down`);
    }
    check((await panelText(page, 'alice', '.connection')) === 'reconnecting…',
      'alice\'s panel says reconnecting…');
    await waitForPanel(page, 'bob', { state: 'failed', count: '1' }, 'bob keeps his last status');
    command('start');
    await nextLine((l) => l === 'started', 'the gateway to start again');
    await attached(members);
    for (const member of members) {
      await waitForPanel(page, member, { connection: 'open' }, `${member} after the relay is back`);
    }
    check(await deliver('bob', { member: 'bob', state: 'synced', at, messages: 7 }) === 1,
      'the relay reached bob\'s new session');
    await waitForPanel(page, 'bob', { state: 'synced', count: '2' }, 'bob after the reconnect');

    check(pageErrors.length === 0, `the page raised no errors (${pageErrors.join('; ')})`);
    console.log(`gateway page: ${checks} checks passed in Chromium ${browser.version()}` +
      ` (${members.length} members, 2 tabs, 1 relay restart)`);
  } finally {
    await browser.close();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    const message = error instanceof CheckFailed ? error.message : (error.stack || String(error));
    console.error(`gateway page test FAILED after ${checks} checks: ${message}`);
    process.exit(1);
  },
);
