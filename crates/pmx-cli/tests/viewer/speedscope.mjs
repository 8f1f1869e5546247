// Loads profiles into speedscope's web app in headless Chromium, as a user
// would, and prints what the page shows: one JSON line per profile.
//
//   node speedscope.mjs MODULES OUTDIR PROFILE...
//
// MODULES is an npm prefix holding `speedscope` and `playwright-core`
// (MODULES/node_modules/...); Chromium is Debian's (/usr/bin/chromium, or
// $PMX_CHROMIUM), never a downloaded one. Each profile is opened from
// speedscope's own index.html (a file:// URL: nothing is served, nothing
// leaves the machine), imported through the page's "Browse" file input,
// and read back from the Sandwich view, the one view that is a DOM table
// (the flame graphs are drawn on a canvas). A screenshot of that view, its
// hottest row selected, is written to OUTDIR/NAME.png.
//
// Each line: {profile, title, importer, failure, offline, rows, screenshot}
// where rows are the table's rows in page order as {name, file, total,
// self} (shares in percent, from the width of each cell's bar), importer
// the page's "Importing …" console line, failure the page's alert or
// import error (null when the import worked), and offline the URLs of any
// request that was not a local file (an empty list).

import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, outdir, ...profiles] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(modules), 'package.json'));
const { chromium } = require('playwright-core');
const app = path.join(path.dirname(require.resolve('speedscope/package.json')),
  'dist', 'release', 'index.html');

// The flags a closed network needs: no background connections at start.
const browser = await chromium.launch({
  executablePath: process.env.PMX_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  for (const profile of profiles) {
    console.log(JSON.stringify(await view(profile)));
  }
} finally {
  await browser.close();
}

async function view(profile) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const seen = { importer: null, failure: null, offline: [] };
  let failed;
  const failure = new Promise(done => { failed = done; });
  const fail = why => { seen.failure ??= why; failed(); };
  page.on('request', r => { if (!/^(file|data|blob):/.test(r.url())) seen.offline.push(r.url()); });
  page.on('console', m => {
    if (m.text().startsWith('Importing')) seen.importer = m.text();
    if (m.text().startsWith('Failed to load format')) fail(m.text());
  });
  page.on('pageerror', e => fail(`page error: ${e.message}`));
  // speedscope says "Unrecognized format!" (and the like) in an alert.
  page.on('dialog', d => { fail(`alert: ${d.message()}`); d.dismiss(); });
  await page.goto('file://' + app);
  await page.setInputFiles('input[type=file]', profile);
  // The view tabs appear once a profile is loaded.
  // (A wait that loses the race to a failure ends when the page closes.)
  const sandwich = page.getByText('Sandwich');
  const loaded = sandwich.waitFor({ timeout: 30000 });
  loaded.catch(() => {});
  await Promise.race([loaded, failure]);
  const result = { profile, title: await page.title(), ...seen, rows: [], screenshot: null };
  if (seen.failure === null) {
    await sandwich.click();
    const rows = page.locator('tr:has(td)');
    await rows.first().waitFor();
    // Each row: Total | Self | Symbol Name; a share is its bar's CSS width.
    result.rows = await rows.evaluateAll(trs => trs.map(tr => {
      const td = tr.querySelectorAll('td');
      const share = cell => parseFloat(cell.querySelector('div > div').style.width);
      return { name: td[2].textContent, file: td[2].title, total: share(td[0]), self: share(td[1]) };
    }));
    await rows.first().click(); // shows its callers and callees
  }
  result.screenshot = path.join(outdir, path.basename(profile) + '.png');
  await page.screenshot({ path: result.screenshot });
  await page.close();
  return result;
}
