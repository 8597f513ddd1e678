import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'stream';
import { AuditAccess } from '../audit';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope } from '../common/auth/decorators';
import { UuidParam } from '../common/http/uuid-param';
import { ArchiveService } from './archive.service';

/** An AbortSignal that fires when the client's connection closes before the answer is done. */
function clientGone(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  request.raw.once('aborted', () => controller.abort());
  return controller.signal;
}

@ApiTags('studies')
@Controller('studies')
export class ArchiveController {
  constructor(private readonly archives: ArchiveService) {}

  @Get(':id/archive')
  @Auth()
  @AuditAccess('study.download')
  @ApiOperation({ summary: 'Every instance of the study as DICOM files in one ZIP, streamed from the image server' })
  @ApiProduces('application/zip')
  @ApiOkResponse({ schema: { type: 'string', format: 'binary' }, description: 'Content-Disposition: attachment' })
  @ApiNotFoundResponse({
    description:
      'Missing or outside the caller\'s scope: `{message: "Study not found."}`; the image server cannot give its files: ' +
      '`{message: "Archive not available"}`',
  })
  async archive(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') id: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Readable> {
    const archive = await this.archives.open(scope, id, clientGone(request, reply));
    reply
      .header('content-type', 'application/zip')
      .header('content-disposition', `attachment; filename="${archive.fileName}"`)
      .header('cache-control', 'no-store');
    return archive.body;
  }
}
