/* global module */
/**
 * The layer rule (README, "Layers"; docs/architecture.md): no import runs back up a layer, and no
 * cycle between files or folders.
 *
 * FLOORS lists every folder and top-level module of src/ from the ground up. A module imports
 * only its own folder and the floors below it, so a cycle between two folders cannot pass: one
 * of its two arrows would run up. A cycle between files of one folder is the `no-circular` rule.
 * On top of the order, a few floors import less than everything below them (the rules after it):
 * the ports only the model, the adapters only the ground, and only the composition root picks an
 * adapter.
 *
 * The workspace packages (packages/*: the Jsonnet engine, the generic extractor) stand apart: they
 * import nothing of src/, and src/ uses them by name, through their public API (the `packages-*`
 * rules at the end). Checked by `npm run lint` (depcruise src packages).
 */
const FLOORS = [
  // The ground: values in, values out.
  ['domain-errors', 'domain-errors.ts', 'the domain errors every layer throws (api/ and sources/ map them to answers)'],
  ['version', 'version.ts', 'the version'],
  ['logger', 'logger.ts', 'the logger'],
  ['start-failure', 'start-failure.ts', 'the one-line start failures'],
  ['sync-dir', 'sync-dir.ts', 'fsync of a directory (local level, staging adapter)'],
  ['model', 'model/', 'the shapes of sources, sinks, columns, records and levels; ids; pure checks'],
  ['contract', 'contract/', 'the API contract: the shapes of the APIs\' answers and request bodies, shared with the console'],
  ['ports', 'ports/', 'the ports: interfaces of the metadata store, event log, Target, Staging, id allocation'],
  ['pipeline', 'pipeline/', 'pure mapping: columns, settings, the record codec, CSV rows'],
  ['config', 'config.ts', 'the flags and their defaults'],
  // The adapters: the ports' implementations.
  ['adapters', 'adapters/', 'the adapters: LMDB, Kafka, DuckDB, PostgreSQL, the staging directory, the template engine'],
  // The services.
  ['levels', 'levels/', 'the stream levels: local, staging, target; statistics; mapping failures'],
  ['observability', 'observability/', 'metrics, gauges, readiness'],
  ['components', 'components/', 'Keboola components (generic extractor, echo)'],
  ['storage', 'storage/', 'the Storage API services: tables, tokens, files, configurations'],
  ['definition', 'definition/', 'the sources\' and sinks\' services, the task store'],
  ['queue', 'queue/', 'the job queue'],
  // The runtime.
  ['actors', 'actors/', 'the stream runtime: router, sink writers, level operator, render threads'],
  // The HTTP edge.
  ['http', 'http/', 'HTTP plumbing every route family shares: errors, the error handler, body parsers, the server'],
  ['sources', 'sources/', 'one folder per source type: transport, decoding, answers'],
  ['api', 'api/', 'the management APIs: Stream, Storage, Queue'],
  // The composition root.
  ['wiring', 'wiring/', 'the composition root: the adapters chosen, the HTTP app, the render worker\'s entry'],
  ['services', 'services.ts', 'the services of a node'],
  ['data-dir', 'data-dir.ts', 'the data directory'],
  ['server', 'server.ts', 'a node, started'],
  ['cli', 'cli/', 'the command line'],
  ['tools', 'tools/', 'development tools main.ts runs (the Kafka broker and PostgreSQL launchers)'],
  ['main', 'main.ts', 'the entry'],
];

const esc = (s) => s.replace(/[.]/g, '\\.');
const pathOf = ([, where]) => (where.endsWith('/') ? `^src/${esc(where)}` : `^src/${esc(where)}$`);
const anyOf = (floors) => `(${floors.map(pathOf).join('|')})`;

const floorRules = FLOORS.map((floor, i) => ({
  name: `${floor[0]}-imports-only-below`,
  comment: `${floor[1]} (${floor[2]}) imports only itself and the floors below it.`,
  severity: 'error',
  from: { path: pathOf(floor) },
  to: { path: '^src/', pathNot: anyOf(FLOORS.slice(0, i + 1)) },
}));

// A source type's transport files (routes, answers, request bodies, the export an OTLP request
// goes through whatever its transport: ingest.ts); its other files decode and flatten, pure like
// pipeline/. sources/ingest/ is what every source type's transport shares; sources/otlp-grpc/ is
// OTLP's second transport (a listener, admission, status codes), all of it transport.
const SOURCE_TRANSPORT = '(routes|index|answers|body|inflight|ingest|batch-route|fast-path)\\.ts$';
const SOURCE_DECODING = `^src/sources/(?!ingest/|otlp-grpc/)[^/]+/(?!${SOURCE_TRANSPORT})`;

module.exports = {
  forbidden: [
    ...floorRules,
    {
      name: 'model-is-ground',
      comment: 'model/ imports only itself and the domain errors.',
      severity: 'error',
      from: { path: '^src/model/' },
      to: { path: '^src/', pathNot: '^src/(model/|domain-errors\\.ts$)' },
    },
    {
      name: 'ports-are-interfaces',
      comment: 'ports/ (interfaces, and the errors they promise) imports only model/ and the domain errors.',
      severity: 'error',
      from: { path: '^src/ports/' },
      to: { path: '^src/', pathNot: '^src/(ports/|model/|domain-errors\\.ts$)' },
    },
    {
      name: 'adapters-import-only-the-ground',
      comment: 'An adapter implements a port with the ground below it (model/, ports/, the pure pipeline/, the logger, the workspace packages); it takes its settings as arguments, not Config.',
      severity: 'error',
      from: { path: '^src/adapters/' },
      to: { path: '^src/', pathNot: '^src/(adapters|model|ports|pipeline)/|^src/(logger|sync-dir|domain-errors)\\.ts$' },
    },
    {
      name: 'only-the-composition-root-picks-adapters',
      comment: 'Everything else uses the ports; wiring/ and server.ts choose the adapters.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(adapters/|wiring/|server\\.ts$)' },
      to: { path: '^src/adapters/' },
    },
    {
      name: 'pure-is-pure',
      comment: 'model/, ports/, pipeline/ and the decoding files of a source type are values in, values out: no file system, network, process or database.',
      severity: 'error',
      from: { path: `^src/(model|ports|pipeline)/|${SOURCE_DECODING}` },
      to: { path: '^(node:)?(fs|fs/promises|http|https|child_process|worker_threads|cluster|dgram)$|node_modules/(fastify|kafkajs|lmdb|@duckdb|pg|pg-copy-streams|undici)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'source-decoding-imports-only-the-ground',
      comment: 'A source type\'s decoding files import the ground and each other, never its transport or a service.',
      severity: 'error',
      from: { path: SOURCE_DECODING },
      to: { path: '^src/', pathNot: `^src/(model|pipeline)/|^src/domain-errors\\.ts$|${SOURCE_DECODING}[^/]+$` },
    },
    {
      name: 'database-clients-in-adapters',
      comment: 'Code outside adapters/ never imports kafkajs, lmdb, DuckDB or PostgreSQL clients. Exception: the development broker launcher (tools/kafka-broker/) checks with a kafkajs admin client that the broker it started answers; it is not on the record\'s path.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(adapters|tools/kafka-broker)/' },
      to: { path: 'node_modules/(kafkajs|lmdb|@duckdb|pg|pg-copy-streams)/' },
    },
    {
      name: 'tools-stand-alone',
      comment: 'The development tools (tools/: the Kafka broker and PostgreSQL launchers) are run by main.ts and the tests; they import nothing else of the project.',
      severity: 'error',
      from: { path: '^src/tools/' },
      to: { path: '^src/', pathNot: '^src/tools/' },
    },
    // The API contract (src/contract/): the console and the server share the answers' shapes.
    {
      name: 'console-imports-contract-only',
      comment: 'The console (src/console/, bundled for the browser) imports only itself, model/ (pure shapes and checks) and the API contract (src/contract/); of the packages only preact and uplot (and its css).',
      severity: 'error',
      from: { path: '^src/console/' },
      to: { pathNot: '^src/(console|model|contract)/|node_modules/(preact|uplot)/' },
    },
    {
      name: 'contract-is-ground',
      comment: 'The API contract (src/contract/) is shapes only: it imports only itself and model/, so that the console bundles nothing of the server.',
      severity: 'error',
      from: { path: '^src/contract/' },
      to: { pathNot: '^src/(contract|model)/' },
    },
    // The workspace packages (packages/<name>/, README "Layout"): libraries of their own.
    {
      name: 'packages-stand-alone',
      comment: 'A workspace package imports nothing of the app (src/).',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^src/' },
    },
    {
      name: 'client-uses-only-the-platform',
      comment: 'The client library (packages/client, for Node and browsers) has no dependency: it imports only its own files, never a Node module or an npm package (fetch, CompressionStream and timers are globals of both platforms; its build type-checks against the browser\'s).',
      severity: 'error',
      from: { path: '^packages/client/src/' },
      to: { pathNot: '^packages/client/src/' },
    },
    {
      name: 'packages-public-api',
      comment: 'The app and the other packages use a package only through its public API (packages/<name>/src/index.ts), never a file inside it.',
      severity: 'error',
      from: { path: '^(src|packages/[^/]+)/' },
      to: { path: '^packages/', pathNot: '^($1/|packages/[^/]+/src/index\\.ts$)' },
    },
    {
      name: 'packages-by-name',
      comment: 'The app and the other packages import a package by its name (@sluice/<name>), never by a relative path into packages/.',
      severity: 'error',
      from: { path: '^(src|packages/[^/]+)/' },
      to: { path: '^packages/', pathNot: '^$1/', dependencyTypesNot: ['aliased'] },
    },
    {
      name: 'no-circular',
      comment: 'No cycle between files (between folders, the floors rule it out).',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'every-module-has-a-floor',
      comment: 'A new folder or top-level module gets its place in FLOORS (.dependency-cruiser.cjs) before anything imports it.',
      severity: 'error',
      from: { path: '^src/', pathNot: `^src/console/|${anyOf(FLOORS)}` },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^packages/[^/]+/(dist|node_modules)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'] },
  },
};
