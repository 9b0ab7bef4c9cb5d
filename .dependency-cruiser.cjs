/* global module */
/**
 * The layer rule (README, "Layers"): a module imports only from its own layer or the layers
 * below it. From the ground up:
 *   ground    model/ (the definitions' shapes, ids, column checks), pipeline/,
 *             domain-errors, version, logger, config
 *   adapters  connectors/ (the ports' implementations), observability/
 *   services  definition/ (sources, sinks, versions, tasks), storage/, levels/, queue/, components/
 *   runtime   actors/
 *   api       api/
 *   top       main.ts, server.ts, services.ts, data-dir.ts, cli/, tools/ (development tools main.ts runs)
 * Checked by `npm run lint` (depcruise src packages). The workspace packages (packages/*: the
 * Jsonnet engine, the generic extractor) stand apart: see the rules `packages-*` at the end.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-api-below-api',
      comment: 'Only api/ and the composition root may import api/: lower layers throw domain errors, api/ maps them.',
      severity: 'error',
      from: { path: '^src/(model|definition|storage|levels|queue|components|actors|connectors|pipeline|observability)/' },
      to: { path: '^src/api/' },
    },
    {
      name: 'no-runtime-below-runtime',
      comment: 'The actors (the stream runtime) sit above the services and adapters they drive.',
      severity: 'error',
      from: { path: '^src/(model|definition|storage|levels|queue|components|connectors|pipeline|observability)/' },
      to: { path: '^src/actors/' },
    },
    {
      name: 'ground-is-pure',
      comment: 'pipeline/ is pure logic: values in, values out; only the model below it.',
      severity: 'error',
      from: { path: '^src/pipeline/' },
      to: { path: '^src/(api|actors|storage|levels|queue|components|connectors|observability|server|services|main|definition)' },
    },
    {
      name: 'model-is-ground',
      comment: 'model/ is the ground floor: the shapes of sources, sinks and columns, ids, pure checks; it imports only itself and the domain errors.',
      severity: 'error',
      from: { path: '^src/model/' },
      to: { path: '^src/', pathNot: '^src/(model/|domain-errors\\.ts$)' },
    },
    {
      name: 'adapters-below-services',
      comment: 'Adapters implement ports; they do not call the services, the runtime or the API.',
      severity: 'error',
      from: { path: '^src/connectors/' },
      to: { path: '^src/(api|actors|definition|queue|components|server|services|main)' },
    },
    {
      name: 'ports-not-adapters',
      comment: 'Services and the runtime use the ports (the metadata store, the event log, the Target in storage/target.ts, the Staging in levels/staging.ts), never a concrete adapter: the composition root (server.ts) picks those. The render worker builds its own template engine (a worker thread is its own composition root).',
      severity: 'error',
      from: { path: '^src/(definition|storage|levels|queue|components|actors|observability)/', pathNot: '^src/actors/render/render-worker\\.ts$' },
      to: { path: '^src/connectors/', pathNot: '^src/connectors/(metadata/store|event-log/event-log)\\.ts$' },
    },
    {
      name: 'no-top-below-top',
      comment: 'The composition root (server.ts, services.ts, main.ts, cli/) and the development tools (tools/) are imported by nobody below it.',
      severity: 'error',
      from: { path: '^src/(model|definition|storage|levels|queue|components|actors|connectors|pipeline|observability)/' },
      to: { path: '^src/(server|main|services|data-dir)\\.ts$|^src/(cli|tools)/' },
    },
    {
      name: 'database-clients-in-connectors',
      comment: 'DESIGN.md: code outside connectors/ never imports kafkajs, lmdb, DuckDB or PostgreSQL clients. Exception: the development broker launcher (tools/kafka-broker/) checks with a kafkajs admin client that the broker it started answers; it is not on the record\'s path.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(connectors|tools/kafka-broker)/' },
      to: { path: 'node_modules/(kafkajs|lmdb|@duckdb|pg|pg-copy-streams)/' },
    },
    {
      name: 'tools-stand-alone',
      comment: 'The development tools (tools/: the Kafka broker launcher) are run by main.ts and the tests; they import nothing else of the project.',
      severity: 'error',
      from: { path: '^src/tools/' },
      to: { path: '^src/', pathNot: '^src/tools/' },
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
      name: 'no-circular-layers',
      severity: 'warn',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/console/|^packages/[^/]+/(dist|node_modules)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'] },
  },
};
