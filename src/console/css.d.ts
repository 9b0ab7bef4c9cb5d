/** CSS imports are bundled by esbuild (scripts/build-console.mjs) into app.css. */
declare module '*.css';
