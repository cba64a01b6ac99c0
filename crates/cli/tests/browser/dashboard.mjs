// Drives the dashboard in Debian's chromium, headless, for
// crates/cli/tests/dashboard.rs: signs in, submits a run whose plan writes
// a file, watches a step turn `succeeded` without a reload, approves the
// paused write_file step from the page, waits for the run to end `ok`,
// saves a screenshot. Prints one JSON line with what it saw; exits non-zero
// (with the reason on stderr) at the first thing that is not as expected.
//
// Input (environment): STEPWISE_URL, STEPWISE_TOKEN, DASH_NOTES,
// DASH_WORKSPACE, DASH_PLAN (JSON), DASH_SCREENSHOT, DASH_PROFILE (a fresh
// --user-data-dir), CHROMIUM (default /usr/bin/chromium); DASH_MODE=no-auth
// only checks that a server without auth shows the runs with no sign-in;
// DASH_CUT_STREAMS=1 cuts the page's first two event streams short.
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const url = env('STEPWISE_URL');
const TIMEOUT = 60_000;

const context = await chromium.launchPersistentContext(env('DASH_PROFILE'), {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 900 },
});
const errors = [];
try { drive: {
  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(TIMEOUT);
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });

  await page.goto(url);
  if (process.env.DASH_MODE === 'no-auth') {
    // --insecure-no-auth: straight to the runs list, no sign-in form.
    await page.waitForSelector('#runs');
    const signIn = (await page.locator('#signin').count()) > 0;
    const who = await page.locator('#who').textContent();
    await page.screenshot({ path: env('DASH_SCREENSHOT') });
    console.log(JSON.stringify({ signIn, who, errors }));
    break drive;
  }
  // A wrong token is refused on the page; the right one signs in.
  await page.fill('#token', 'not-the-token-0000000000');
  await page.click('#signin button[type=submit]');
  await page.waitForFunction(() => /not valid/.test(document.querySelector('#signin-error')?.textContent || ''));
  errors.length = 0; // the 401 of that attempt is logged by the browser, as it should be
  await page.fill('#token', env('STEPWISE_TOKEN'));
  await page.click('#signin button[type=submit]');
  await page.waitForSelector('#submit');
  // Set once: still there at the end only if the page never reloaded.
  await page.evaluate(() => { window.__noReload = 'same page'; });

  // DASH_CUT_STREAMS=1: the first two event streams the page opens are cut
  // short: one ends before any event, one repeats the last event the page
  // has and ends. The page must reconnect each time with the same Last-Event-ID, drop the
  // repeat, and go on from the server's stream with nothing missed.
  const streams = [];
  if (process.env.DASH_CUT_STREAMS) await page.route('**/v1/runs/*/events*', async (route) => {
    const req = route.request();
    if (!(req.headers().accept || '').includes('text/event-stream')) return route.continue();
    const last = Number(req.headers()['last-event-id']);
    streams.push(last);
    if (streams.length === 1) {
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: ': cut\n\n' });
    }
    if (streams.length === 2 && last >= 1) {
      const u = new URL(req.url());
      u.search = `after=${last - 1}&limit=1`;
      const page1 = await (await route.fetch({ url: u.toString(), headers: { ...req.headers(), accept: 'application/json' } })).json();
      const ev = page1.events[0];
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: `id: ${ev.seq}\nevent: ${ev.kind}\ndata: ${JSON.stringify(ev)}\n\n` });
    }
    return route.continue();
  });

  await page.click('#submit summary');
  await page.fill('#submit-goal', 'What is the latency budget for the first token?');
  await page.fill('#submit-notes', env('DASH_NOTES'));
  await page.fill('#submit-workspace', env('DASH_WORKSPACE'));
  await page.fill('#submit-plan', env('DASH_PLAN'));
  await page.click('#submit-button');
  await page.waitForURL(/#\/runs\/run_/);
  const runId = decodeURIComponent(new URL(page.url()).hash.replace('#/runs/', ''));

  // The search step turns succeeded, drawn from the live stream.
  await page.waitForSelector('.dag .node[data-step="find"][data-status="succeeded"]');
  // The write waits for a person: the page shows the exact tool and arguments.
  const pending = page.locator('#approvals .pending[data-step="save"]');
  await pending.waitFor();
  const tool = await pending.locator('code.tool').textContent();
  const args = JSON.parse(await pending.locator('pre.args').textContent());
  const saveStatusBefore = await page.getAttribute('.dag .node[data-step="save"]', 'data-status');
  const runStatusBefore = await page.getAttribute('#run-status', 'data-status');
  await page.click('#approvals button.approve[data-step="save"]');
  await page.waitForSelector('#run-status[data-status="ok"]');
  await page.waitForSelector('.dag .node[data-step="save"][data-status="succeeded"]');
  await page.waitForSelector('#report .cite');
  const citeHref = await page.getAttribute('#report .cite', 'href');
  const citedQuote = await page.locator(citeHref).locator('blockquote').textContent();
  const seen = await page.evaluate(() => ({
    noReload: window.__noReload,
    latency: window.__stepwiseLatency,
    events: document.querySelectorAll('#events tr').length,
    critical: document.querySelectorAll('.timeline .span.critical').length,
    streamState: document.querySelector('#stream-state')?.textContent,
    streamed: window.__stepwiseStream,
    // The report's Markdown rendered, not shown raw: no backtick, `**` or
    // `_…_` left in its text; code and emphasis as elements.
    reportRaw: /`|\*\*|(^|\s)_\S[^_]*_(\s|$)/.test(document.querySelector('#report')?.textContent || ''),
    reportCode: document.querySelectorAll('#report code').length,
  }));
  await page.screenshot({ path: env('DASH_SCREENSHOT'), fullPage: true });

  // Back on the list, the run is listed ok.
  await page.click('a[href="#/"]');
  await page.waitForSelector(`#runs tr[data-run="${runId}"][data-status="ok"]`);
  const listed = await page.locator(`#runs tr[data-run="${runId}"] td`).allTextContents();
  // Run health above the list (GET /v1/stats).
  await page.waitForFunction(() => (document.querySelector('#stats')?.textContent || '').includes('closed loop'));
  const health = await page.locator('#stats').textContent();

  console.log(JSON.stringify({ runId, tool, args, saveStatusBefore, runStatusBefore, citedQuote, listed, health, errors, streams, ...seen }));
} } finally {
  await context.close();
}
