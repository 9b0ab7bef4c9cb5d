/** What the crash and cluster tests configure their sinks with. */

export const UPLOAD_INTERVAL = 'storage.level.staging.upload.trigger.interval';
export const IMPORT_COUNT = 'storage.level.target.import.trigger.count';
/** One column: the event id of the bodies `{"n": id}` the clients send. */
export const N_COLUMNS = [{ type: 'path', name: 'n', path: 'n', rawString: true }];
