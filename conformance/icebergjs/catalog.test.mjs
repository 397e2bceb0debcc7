// iceberg-js (npm `iceberg-js`, Supabase's Iceberg REST client) against a
// real `floe serve`: the binary is started on a free loopback port with a
// fresh data directory and warehouse, driven only through IcebergRestCatalog,
// and stopped with SIGINT at the end.
//
// Run with `node --test` from this folder after `npm ci` (`make test` does
// both). FLOE_BIN names the binary; the default is the repository's bin/floe
// (`make build`).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { IcebergRestCatalog, IcebergError, typesEqual } from 'iceberg-js';

const here = dirname(fileURLToPath(import.meta.url));
const floeBin = process.env.FLOE_BIN
  ? resolve(process.env.FLOE_BIN)
  : resolve(here, '..', '..', 'bin', 'floe');

const STARTUP_TIMEOUT_MS = 30_000;
const SHUTDOWN_TIMEOUT_MS = 30_000;

// ---------------------------------------------------------------------------
// floe process

/** Starts `floe serve` and resolves once it logged its address and /readyz is 200. */
async function startFloe() {
  if (!existsSync(floeBin)) {
    throw new Error(`floe binary not found at ${floeBin}: run \`make build\` or set FLOE_BIN`);
  }
  const tmp = await mkdtemp(join(tmpdir(), 'floe-icebergjs-'));
  const child = spawn(
    floeBin,
    [
      'serve',
      '--dev',
      '--log-format', 'json',
      '--addr', '127.0.0.1:0',
      '--data-dir', join(tmp, 'data'),
      '--warehouse', join(tmp, 'warehouse'),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );

  const lines = [];
  const exited = new Promise((res) => {
    child.once('exit', (code, signal) => res({ code, signal }));
  });
  const addr = await new Promise((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`floe did not log a listening address within ${STARTUP_TIMEOUT_MS} ms:\n${lines.join('\n')}`)),
      STARTUP_TIMEOUT_MS,
    );
    child.once('error', (err) => {
      clearTimeout(timer);
      rej(err);
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      lines.push(line);
      try {
        const entry = JSON.parse(line);
        if (entry.msg === 'listening' && entry.addr) {
          clearTimeout(timer);
          res(entry.addr);
        }
      } catch {
        // not a JSON log line
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`floe exited (code ${code}, signal ${signal}) before listening:\n${lines.join('\n')}`));
    });
  });

  const baseUrl = `http://${addr}`;
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    try {
      const res = await fetch(`${baseUrl}/readyz`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not accepting connections yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`GET ${baseUrl}/readyz did not answer 200 within ${STARTUP_TIMEOUT_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, baseUrl, lines, exited, tmp };
}

const floe = await startFloe();

after(async () => {
  if (floe.child.exitCode === null && floe.child.signalCode === null) {
    floe.child.kill('SIGKILL');
    await floe.exited;
  }
  await rm(floe.tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// client

/** Every request iceberg-js makes, so a failure can show the exchange. */
const exchanges = [];

async function recordingFetch(input, init = {}) {
  const res = await fetch(input, init);
  const body = res.status === 304 || init.method === 'HEAD' ? '' : await res.clone().text();
  exchanges.push({
    method: init.method ?? 'GET',
    url: String(input),
    headers: init.headers,
    request: init.body,
    status: res.status,
    etag: res.headers.get('etag'),
    response: body.length > 2000 ? `${body.slice(0, 2000)}…` : body,
  });
  return res;
}

const catalog = new IcebergRestCatalog({
  baseUrl: floe.baseUrl,
  warehouse: 'lake',
  auth: { type: 'none' },
  fetch: recordingFetch,
});

/** The exchanges since `mark`, for assertion messages. */
function since(mark) {
  return JSON.stringify(exchanges.slice(mark), null, 2);
}

/**
 * Asserts that `promise` rejects with an IcebergError of this status and
 * type. Call it right after starting the request: the exchange it shows on
 * failure is the first one recorded from then on.
 */
async function rejectsWith(promise, status, type) {
  const mark = exchanges.length;
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof IcebergError, `want an IcebergError, got ${err}`);
    const context = `${err.message}; exchange: ${since(mark)}`;
    assert.equal(err.status, status, `status of ${context}`);
    assert.equal(err.icebergType, type, `type of ${context}`);
    assert.equal(err.icebergCode, status, `error.code in the body of ${context}`);
    assert.equal(err.isCommitStateUnknown, false);
    return true;
  });
}

const schema = {
  type: 'struct',
  'schema-id': 0,
  'identifier-field-ids': [1],
  fields: [
    { id: 1, name: 'id', type: 'long', required: true },
    { id: 2, name: 'ts', type: 'timestamptz', required: false },
    { id: 3, name: 'category', type: 'string', required: false, doc: 'kind of event' },
    { id: 4, name: 'amount', type: 'decimal(10,2)', required: false },
  ],
};

const partitionSpec = {
  'spec-id': 0,
  fields: [
    { 'source-id': 3, 'field-id': 1000, name: 'category', transform: 'identity' },
    { 'source-id': 2, 'field-id': 1001, name: 'ts_day', transform: 'day' },
  ],
};

function createRequest(name, properties = {}) {
  return { name, schema, 'partition-spec': partitionSpec, properties };
}

function namesOf(identifiers) {
  return identifiers.map((t) => [...t.namespace, t.name].join('.')).sort();
}

// ---------------------------------------------------------------------------
// tests, in file order

test('config: warehouse lake resolves to the prefix floe hands back', async () => {
  const config = await catalog.loadConfig();
  assert.equal(config.overrides.prefix, 'lake');
  assert.ok(Array.isArray(config.endpoints), 'endpoints advertised');
  assert.ok(config.endpoints.includes('POST /v1/{prefix}/namespaces/{namespace}/tables/{table}'));
  // iceberg-js sends an Idempotency-Key on every mutation whether or not the
  // server advertises a lifetime; if it does, it is an ISO-8601 duration.
  const lifetime = config['idempotency-key-lifetime'];
  if (lifetime !== undefined) assert.match(lifetime, /^P(?!$)(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$/);

  // The client swallows a failed config call and falls back to the
  // warehouse name, so check that the first routed call used the prefix.
  const mark = exchanges.length;
  await catalog.listNamespaces();
  const url = new URL(exchanges[mark].url);
  assert.equal(url.pathname, '/v1/lake/namespaces');
  assert.equal(exchanges[mark].status, 200);
});

test('namespace CRUD', async () => {
  const ns = { namespace: ['js_ns'] };
  const child = { namespace: ['js_ns', 'child'] };

  assert.equal(await catalog.namespaceExists(ns), false);

  const created = await catalog.createNamespace(ns, { properties: { owner: 'iceberg-js', stage: 'test' } });
  assert.deepEqual(created.namespace, ['js_ns']);
  // A namespace that sets no location is told where floe puts its tables.
  const warehouse = pathToFileURL(join(floe.tmp, 'warehouse')).href;
  assert.deepEqual(created.properties, { owner: 'iceberg-js', stage: 'test', location: `${warehouse}/js_ns` });
  assert.equal(await catalog.namespaceExists(ns), true);

  const meta = await catalog.loadNamespaceMetadata(ns);
  assert.equal(meta.properties.owner, 'iceberg-js');
  assert.equal(meta.properties.stage, 'test');

  const update = await catalog.updateNamespaceProperties(ns, {
    updates: { owner: 'floe', retention: '7d' },
    removals: ['stage', 'never-set'],
  });
  assert.deepEqual([...update.updated].sort(), ['owner', 'retention']);
  assert.deepEqual(update.removed, ['stage']);
  assert.deepEqual(update.missing, ['never-set']);
  const after = await catalog.loadNamespaceMetadata(ns);
  assert.equal(after.properties.owner, 'floe');
  assert.equal(after.properties.retention, '7d');
  assert.equal(after.properties.stage, undefined);

  // A nested namespace, listed under its parent (the client sends the
  // parent joined with 0x1F).
  await catalog.createNamespace(child);
  assert.equal(await catalog.namespaceExists(child), true);
  assert.deepEqual((await catalog.loadNamespaceMetadata(child)).properties, { location: `${warehouse}/js_ns/child` });

  const top = await catalog.listNamespaces();
  assert.ok(
    top.namespaces.some((n) => n.namespace.join('.') === 'js_ns'),
    `js_ns in ${JSON.stringify(top)}`,
  );
  assert.ok(!top.namespaces.some((n) => n.namespace.length > 1), 'top level lists only top-level namespaces');
  const children = await catalog.listNamespaces({ parent: ns });
  assert.deepEqual(children.namespaces, [{ namespace: ['js_ns', 'child'] }]);
  assert.equal(children.nextPageToken, undefined);

  // A namespace with children cannot be dropped.
  await rejectsWith(catalog.dropNamespace(ns), 409, 'NamespaceNotEmptyException');

  await catalog.dropNamespace(child);
  await catalog.dropNamespace(ns);
  assert.equal(await catalog.namespaceExists(child), false);
  assert.equal(await catalog.namespaceExists(ns), false);
  const gone = await catalog.listNamespaces();
  assert.ok(!gone.namespaces.some((n) => n.namespace[0] === 'js_ns'));
});

test('namespace listing pages', async () => {
  const names = ['js_page_a', 'js_page_b', 'js_page_c'];
  for (const n of names) await catalog.createNamespace({ namespace: [n] });

  const seen = [];
  let pageToken;
  let pages = 0;
  do {
    const page = await catalog.listNamespaces({ pageSize: 1, pageToken });
    assert.ok(page.namespaces.length <= 1, `page of ${page.namespaces.length}`);
    seen.push(...page.namespaces.map((n) => n.namespace.join('.')));
    pageToken = page.nextPageToken;
    pages++;
    assert.ok(pages <= 50, 'paging terminates');
  } while (pageToken);
  for (const n of names) assert.ok(seen.includes(n), `${n} in ${seen}`);
  assert.equal(new Set(seen).size, seen.length, `no namespace twice: ${seen}`);

  for (const n of names) await catalog.dropNamespace({ namespace: [n] });
});

test('table CRUD', async () => {
  const ns = { namespace: ['js_tables'] };
  const id = { namespace: ['js_tables'], name: 'events' };
  const renamed = { namespace: ['js_tables'], name: 'events_renamed' };
  await catalog.createNamespace(ns);

  assert.equal(await catalog.tableExists(id), false);

  const created = await catalog.createTableResult(ns, createRequest('events', { 'app.owner': 'iceberg-js' }));
  assert.match(created['metadata-location'], /^file:\/\/.*\/metadata\/00000-[0-9a-f-]{36}\.metadata\.json$/);
  assert.ok(created.etag, 'createTable answers an ETag');
  const md = created.metadata;
  assert.match(md['table-uuid'], /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  assert.ok(md['format-version'] >= 1);
  assert.ok(md.location.startsWith('file://'), md.location);
  assert.equal(md.properties['app.owner'], 'iceberg-js');
  const current = md.schemas.find((s) => s['schema-id'] === md['current-schema-id']);
  assert.deepEqual(
    current.fields.map((f) => [f.name, f.required]),
    [['id', true], ['ts', false], ['category', false], ['amount', false]],
  );
  const types = current.fields.map((f) => f.type);
  ['long', 'timestamptz', 'string', 'decimal(10,2)'].forEach((want, i) =>
    assert.ok(typesEqual(types[i], want), `field ${i} type ${types[i]}, want ${want}`),
  );
  assert.equal(current.fields[2].doc, 'kind of event');
  assert.deepEqual(current['identifier-field-ids'], [current.fields[0].id]);
  const spec = md['partition-specs'].find((s) => s['spec-id'] === md['default-spec-id']);
  const byId = Object.fromEntries(current.fields.map((f) => [f.id, f.name]));
  assert.deepEqual(
    spec.fields.map((f) => [byId[f['source-id']], f.name, f.transform]),
    [
      ['category', 'category', 'identity'],
      ['ts', 'ts_day', 'day'],
    ],
  );

  assert.equal(await catalog.tableExists(id), true);
  assert.deepEqual(namesOf((await catalog.listTables(ns)).identifiers), ['js_tables.events']);

  const loaded = await catalog.loadTable(id);
  assert.equal(loaded['table-uuid'], md['table-uuid']);
  assert.deepEqual(loaded.schemas, md.schemas);

  const result = await catalog.loadTableResult(id);
  assert.equal(result['metadata-location'], created['metadata-location']);
  assert.ok(result.etag, 'loadTable answers an ETag');
  assert.equal(typeof result.config, 'object');
  assert.equal(await catalog.loadTableResult(id, { ifNoneMatch: result.etag }), null, 'If-None-Match of the current ETag is 304');
  assert.equal(await catalog.loadTable(id, { ifNoneMatch: result.etag }), null);
  const other = await catalog.loadTableResult(id, { ifNoneMatch: '"not-the-etag"' });
  assert.equal(other.metadata['table-uuid'], md['table-uuid'], 'a different ETag gets the table');
  const refs = await catalog.loadTableResult(id, { snapshots: 'refs' });
  assert.equal(refs.metadata['table-uuid'], md['table-uuid']);

  await catalog.renameTable({ source: id, destination: renamed });
  assert.equal(await catalog.tableExists(id), false);
  assert.equal(await catalog.tableExists(renamed), true);
  assert.deepEqual(namesOf((await catalog.listTables(ns)).identifiers), ['js_tables.events_renamed']);
  const afterRename = await catalog.loadTableResult(renamed);
  assert.equal(afterRename.metadata['table-uuid'], md['table-uuid'], 'rename keeps the table');
  assert.equal(afterRename['metadata-location'], created['metadata-location']);

  // Across namespaces.
  const ns2 = { namespace: ['js_tables2'] };
  const moved = { namespace: ['js_tables2'], name: 'events' };
  await catalog.createNamespace(ns2);
  await catalog.renameTable({ source: renamed, destination: moved });
  assert.equal(await catalog.tableExists(renamed), false);
  assert.equal((await catalog.loadTable(moved))['table-uuid'], md['table-uuid']);
  assert.deepEqual((await catalog.listTables(ns)).identifiers, []);

  await catalog.dropTable(moved);
  assert.equal(await catalog.tableExists(moved), false);
  assert.deepEqual((await catalog.listTables(ns2)).identifiers, []);

  // purge=true is accepted (floe records it and deletes no file).
  await catalog.createTable(ns, createRequest('purged'));
  await catalog.dropTable({ namespace: ['js_tables'], name: 'purged' }, { purge: true });
  assert.equal(await catalog.tableExists({ namespace: ['js_tables'], name: 'purged' }), false);

  await catalog.dropNamespace(ns2);
  await catalog.dropNamespace(ns);
});

test('table listing pages', async () => {
  const ns = { namespace: ['js_tpage'] };
  await catalog.createNamespace(ns);
  const names = ['t1', 't2', 't3'];
  for (const n of names) await catalog.createTable(ns, createRequest(n));

  const seen = [];
  let pageToken;
  let pages = 0;
  do {
    const page = await catalog.listTables(ns, { pageSize: 2, pageToken });
    assert.ok(page.identifiers.length <= 2, `page of ${page.identifiers.length}`);
    seen.push(...namesOf(page.identifiers));
    pageToken = page.nextPageToken;
    pages++;
    assert.ok(pages <= 10, 'paging terminates');
  } while (pageToken);
  assert.deepEqual(seen.sort(), ['js_tpage.t1', 'js_tpage.t2', 'js_tpage.t3']);
  assert.ok(pages >= 2, `three tables in pages of two took ${pages} page(s)`);

  for (const n of names) await catalog.dropTable({ namespace: ns.namespace, name: n });
  await catalog.dropNamespace(ns);
});

test('commit through updateTable', async () => {
  const ns = { namespace: ['js_commit'] };
  const id = { namespace: ['js_commit'], name: 'orders' };
  await catalog.createNamespace(ns);
  const created = await catalog.createTableResult(ns, createRequest('orders'));
  const base = await catalog.loadTableResult(id);
  const uuid = base.metadata['table-uuid'];
  const schemaId = base.metadata['current-schema-id'];
  const currentSchema = base.metadata.schemas.find((s) => s['schema-id'] === schemaId);
  const lastColumnId = base.metadata['last-column-id'];

  const evolved = {
    type: 'struct',
    'schema-id': schemaId + 1,
    'identifier-field-ids': currentSchema['identifier-field-ids'],
    fields: [
      ...currentSchema.fields,
      { id: lastColumnId + 1, name: 'note', type: 'string', required: false },
    ],
  };

  const mark = exchanges.length;
  const committed = await catalog.updateTable(id, {
    requirements: [
      { type: 'assert-table-uuid', uuid },
      { type: 'assert-current-schema-id', 'current-schema-id': schemaId },
    ],
    updates: [
      { action: 'set-properties', updates: { 'commit.by': 'iceberg-js', 'read.split.target-size': '134217728' } },
      { action: 'add-schema', schema: evolved },
      { action: 'set-current-schema', 'schema-id': -1 },
    ],
  });
  const req = exchanges[mark];
  assert.equal(req.method, 'POST');
  assert.equal(new URL(req.url).pathname, '/v1/lake/namespaces/js_commit/tables/orders');
  assert.ok(req.headers['Idempotency-Key'], 'the client sends an Idempotency-Key');

  assert.notEqual(committed['metadata-location'], base['metadata-location'], 'a commit writes a new metadata file');
  assert.match(committed['metadata-location'], /\/metadata\/00001-[0-9a-f-]{36}\.metadata\.json$/);
  const md = committed.metadata;
  assert.equal(md['table-uuid'], uuid);
  assert.equal(md.properties['commit.by'], 'iceberg-js');
  assert.equal(md.properties['read.split.target-size'], '134217728');
  assert.notEqual(md['current-schema-id'], schemaId, 'the added schema is current');
  const now = md.schemas.find((s) => s['schema-id'] === md['current-schema-id']);
  assert.deepEqual(now.fields.map((f) => f.name), ['id', 'ts', 'category', 'amount', 'note']);
  assert.equal(md['last-column-id'], lastColumnId + 1);
  assert.ok(
    (md['metadata-log'] ?? []).some((e) => e['metadata-file'] === created['metadata-location']),
    'the previous file is in metadata-log',
  );

  // What a reader sees now, and the old ETag no longer matches.
  const reloaded = await catalog.loadTableResult(id, { ifNoneMatch: base.etag });
  assert.ok(reloaded, 'the pre-commit ETag does not match after the commit');
  assert.equal(reloaded['metadata-location'], committed['metadata-location']);
  assert.equal(reloaded.metadata['current-schema-id'], md['current-schema-id']);
  assert.notEqual(reloaded.etag, base.etag);

  // A stale requirement fails with 409 CommitFailedException and changes nothing.
  await rejectsWith(
    catalog.updateTable(id, {
      requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': schemaId }],
      updates: [{ action: 'set-properties', updates: { stale: 'yes' } }],
    }),
    409,
    'CommitFailedException',
  );
  await rejectsWith(
    catalog.commitTable(id, {
      requirements: [{ type: 'assert-table-uuid', uuid: '00000000-0000-0000-0000-000000000000' }],
      updates: [{ action: 'remove-properties', removals: ['commit.by'] }],
    }),
    409,
    'CommitFailedException',
  );
  const unchanged = await catalog.loadTableResult(id);
  assert.equal(unchanged['metadata-location'], committed['metadata-location']);
  assert.equal(unchanged.metadata.properties.stale, undefined);
  assert.equal(unchanged.metadata.properties['commit.by'], 'iceberg-js');

  // commitTable (the alias) with no requirements.
  const second = await catalog.commitTable(id, {
    requirements: [],
    updates: [{ action: 'remove-properties', removals: ['commit.by'] }],
  });
  assert.match(second['metadata-location'], /\/metadata\/00002-[0-9a-f-]{36}\.metadata\.json$/);
  assert.equal(second.metadata.properties['commit.by'], undefined);

  await catalog.dropTable(id);
  await catalog.dropNamespace(ns);
});

test('concurrent commits on one requirement: one wins, one gets 409', async () => {
  const ns = { namespace: ['js_race'] };
  const id = { namespace: ['js_race'], name: 'contended' };
  await catalog.createNamespace(ns);
  await catalog.createTable(ns, createRequest('contended'));
  const base = await catalog.loadTableResult(id);
  const schemaId = base.metadata['current-schema-id'];
  const fields = base.metadata.schemas.find((s) => s['schema-id'] === schemaId).fields;
  const lastColumnId = base.metadata['last-column-id'];

  const attempt = (name) =>
    catalog.updateTable(id, {
      requirements: [{ type: 'assert-current-schema-id', 'current-schema-id': schemaId }],
      updates: [
        { action: 'add-schema', schema: { type: 'struct', fields: [...fields, { id: lastColumnId + 1, name, type: 'int', required: false }] } },
        { action: 'set-current-schema', 'schema-id': -1 },
      ],
    });
  const results = await Promise.allSettled([attempt('from_a'), attempt('from_b')]);
  const won = results.filter((r) => r.status === 'fulfilled');
  const lost = results.filter((r) => r.status === 'rejected');
  assert.equal(won.length, 1, `exactly one commit wins: ${JSON.stringify(results.map((r) => r.status))}`);
  assert.equal(lost.length, 1);
  assert.ok(lost[0].reason instanceof IcebergError, String(lost[0].reason));
  assert.equal(lost[0].reason.status, 409);
  assert.equal(lost[0].reason.icebergType, 'CommitFailedException');

  const final = await catalog.loadTableResult(id);
  assert.equal(final['metadata-location'], won[0].value['metadata-location']);
  const names = final.metadata.schemas
    .find((s) => s['schema-id'] === final.metadata['current-schema-id'])
    .fields.map((f) => f.name);
  assert.equal(names.filter((n) => n.startsWith('from_')).length, 1, `one winner's column: ${names}`);

  await catalog.dropTable(id);
  await catalog.dropNamespace(ns);
});

test('staged create, then an assert-create commit', async () => {
  const ns = { namespace: ['js_staged'] };
  const id = { namespace: ['js_staged'], name: 'staged' };
  await catalog.createNamespace(ns);

  const staged = await catalog.createTableResult(ns, { ...createRequest('staged', { stage: 'yes' }), 'stage-create': true });
  const md = staged.metadata;
  assert.equal(staged['metadata-location'] ?? null, null, 'a staged create writes no metadata file');
  assert.equal(await catalog.tableExists(id), false, 'a staged create commits nothing');

  // The updates a Java/PyIceberg client sends to finish a staged create.
  const committed = await catalog.updateTable(id, {
    requirements: [{ type: 'assert-create' }],
    updates: [
      { action: 'assign-uuid', uuid: md['table-uuid'] },
      { action: 'upgrade-format-version', 'format-version': md['format-version'] },
      { action: 'add-schema', schema: md.schemas[0] },
      { action: 'set-current-schema', 'schema-id': -1 },
      { action: 'add-spec', spec: md['partition-specs'][0] },
      { action: 'set-default-spec', 'spec-id': -1 },
      { action: 'add-sort-order', 'sort-order': md['sort-orders'][0] },
      { action: 'set-default-sort-order', 'sort-order-id': -1 },
      { action: 'set-location', location: md.location },
      { action: 'set-properties', updates: md.properties },
    ],
  });
  assert.equal(committed.metadata['table-uuid'], md['table-uuid']);
  assert.equal(committed.metadata.properties.stage, 'yes');
  assert.equal(await catalog.tableExists(id), true);
  const loaded = await catalog.loadTableResult(id);
  assert.equal(loaded['metadata-location'], committed['metadata-location']);
  assert.deepEqual(
    loaded.metadata['partition-specs'][0].fields.map((f) => f.transform),
    ['identity', 'day'],
  );

  await catalog.dropTable(id);
  await catalog.dropNamespace(ns);
});

// The spec's updateTable 409 is CommitFailedException, and Java's
// CatalogHandlers fails assert-create on an existing table with
// CommitFailedException("Requirement failed: table already exists").
test(
  'assert-create on an existing table is 409 CommitFailedException',
  async () => {
    const ns = { namespace: ['js_create_race'] };
    const id = { namespace: ['js_create_race'], name: 'exists' };
    await catalog.createNamespace(ns);
    try {
      const md = await catalog.createTable(ns, createRequest('exists'));
      await rejectsWith(
        catalog.updateTable(id, {
          requirements: [{ type: 'assert-create' }],
          updates: [
            { action: 'assign-uuid', uuid: md['table-uuid'] },
            { action: 'upgrade-format-version', 'format-version': md['format-version'] },
            { action: 'add-schema', schema: md.schemas[0] },
            { action: 'set-current-schema', 'schema-id': -1 },
          ],
        }),
        409,
        'CommitFailedException',
      );
    } finally {
      await catalog.dropTable(id);
      await catalog.dropNamespace(ns);
    }
  },
);

test('errors: 404 for what does not exist', async () => {
  const ns = { namespace: ['js_err404'] };
  await catalog.createNamespace(ns);
  const missing = { namespace: ['js_err404'], name: 'missing' };

  await rejectsWith(catalog.loadTable(missing), 404, 'NoSuchTableException');
  await rejectsWith(catalog.loadTableResult(missing, { ifNoneMatch: '"x"' }), 404, 'NoSuchTableException');
  await rejectsWith(
    catalog.updateTable(missing, { requirements: [], updates: [{ action: 'set-properties', updates: { a: 'b' } }] }),
    404,
    'NoSuchTableException',
  );
  await rejectsWith(catalog.dropTable(missing), 404, 'NoSuchTableException');
  await rejectsWith(
    catalog.renameTable({ source: missing, destination: { namespace: ['js_err404'], name: 'other' } }),
    404,
    'NoSuchTableException',
  );
  // A table route under a missing namespace: NoSuchTableException, as
  // clients expect.
  await rejectsWith(catalog.loadTable({ namespace: ['js_nope'], name: 't' }), 404, 'NoSuchTableException');

  await rejectsWith(catalog.loadNamespaceMetadata({ namespace: ['js_nope'] }), 404, 'NoSuchNamespaceException');
  await rejectsWith(catalog.dropNamespace({ namespace: ['js_nope'] }), 404, 'NoSuchNamespaceException');
  await rejectsWith(catalog.listTables({ namespace: ['js_nope'] }), 404, 'NoSuchNamespaceException');
  await rejectsWith(
    catalog.updateNamespaceProperties({ namespace: ['js_nope'] }, { updates: { a: 'b' } }),
    404,
    'NoSuchNamespaceException',
  );
  await rejectsWith(catalog.createTable({ namespace: ['js_nope'] }, createRequest('t')), 404, 'NoSuchNamespaceException');

  await catalog.dropNamespace(ns);
});

test('errors: 409 for what already exists', async () => {
  const ns = { namespace: ['js_err409'] };
  const id = { namespace: ['js_err409'], name: 'dup' };
  await catalog.createNamespace(ns);
  await catalog.createTable(ns, createRequest('dup'));
  await catalog.createTable(ns, createRequest('other'));

  await rejectsWith(catalog.createNamespace(ns), 409, 'AlreadyExistsException');
  await rejectsWith(catalog.createTable(ns, createRequest('dup')), 409, 'AlreadyExistsException');
  await rejectsWith(
    catalog.renameTable({ source: { namespace: ['js_err409'], name: 'other' }, destination: id }),
    409,
    'AlreadyExistsException',
  );
  await rejectsWith(catalog.dropNamespace(ns), 409, 'NamespaceNotEmptyException');

  // The *IfNotExists helpers turn those 409s into success.
  assert.equal(await catalog.createNamespaceIfNotExists(ns), undefined);
  const existing = await catalog.createTableIfNotExists(ns, createRequest('dup'));
  assert.equal(existing['table-uuid'], (await catalog.loadTable(id))['table-uuid']);

  await catalog.dropTable(id);
  await catalog.dropTable({ namespace: ['js_err409'], name: 'other' });
  await catalog.dropNamespace(ns);
});

test('floe exits cleanly on SIGINT', async () => {
  floe.child.kill('SIGINT');
  const timeout = new Promise((_, rej) =>
    setTimeout(() => rej(new Error(`floe did not exit within ${SHUTDOWN_TIMEOUT_MS} ms of SIGINT`)), SHUTDOWN_TIMEOUT_MS).unref(),
  );
  const { code, signal } = await Promise.race([floe.exited, timeout]);
  const log = floe.lines.join('\n');
  assert.equal(signal, null, `floe died of ${signal}:\n${log}`);
  assert.equal(code, 0, `exit code after SIGINT:\n${log}`);
  assert.ok(floe.lines.some((l) => l.includes('"msg":"version store closed"')), `no clean store close in the log:\n${log}`);
  assert.ok(!floe.lines.some((l) => l.includes('"level":"ERROR"')), `errors in the log:\n${log}`);
});
