import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { FastifyPluginAsync } from 'fastify';
import type { FileService } from '../../storage/files.js';
import { ApiError } from '../../http/errors.js';
import { storageErrors } from './envelope.js';
import { answerErrorsWith } from '../../http/error-handler.js';

export interface FileDownloadRoutesOptions {
  files: Pick<FileService, 'get' | 'verify' | 'localPath'>;
}

/**
 * `GET /v2/storage/files/{id}/download?expires=...&signature=...`: the file itself, for whoever
 * holds the signed URL that `GET /v2/storage/files/{id}` gave (no token: clients fetch a file's
 * `url` as they would fetch an S3 URL). Outside the Storage plugin's token hook, in its envelope.
 */
export const fileDownloadRoutes: FastifyPluginAsync<FileDownloadRoutesOptions> = async (app, { files }) => {
  answerErrorsWith(app, storageErrors);

  app.get<{ Params: { id: string }; Querystring: { expires?: string; signature?: string } }>('/files/:id/download', {
    // The URL carries the signature, which lets anyone download the file: never in a request log line.
    logLevel: 'warn',
    schema: {
      tags: ['storage exports'],
      summary: 'Download a file by its signed URL (no token)',
      params: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      querystring: { type: 'object', properties: { expires: { type: 'string' }, signature: { type: 'string' } } },
    },
  }, async (req, reply) => {
    const file = files.get(req.params.id);
    if (!file || !files.verify(file, req.query.expires, req.query.signature)) {
      throw new ApiError(403, 'storage.files.signatureInvalid', 'The download URL is not valid or has expired; get a new one from GET /v2/storage/files/{id}.');
    }
    const path = files.localPath(file);
    try {
      await stat(path);
    } catch {
      throw new ApiError(404, 'storage.files.notOnThisNode', `The file ${file.id} is kept by the node at ${file.nodeUrl}; download it from the URL that GET /v2/storage/files/${file.id} gives.`);
    }
    return reply
      .type(file.contentType)
      .header('content-disposition', `attachment; filename="${file.name.replace(/["\\\r\n]/g, '_')}"`)
      .header('content-length', file.sizeBytes)
      .send(createReadStream(path));
  });
};
