import { Controller, Get, Res } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Readable } from 'stream';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope } from '../common/auth/decorators';
import { UuidParam } from '../common/http/uuid-param';
import { InstanceDto } from './dto/study.responses';
import { StudiesService } from './studies.service';

@ApiTags('studies')
@Controller('series')
export class SeriesController {
  constructor(private readonly studies: StudiesService) {}

  @Get(':id/instances')
  @Auth()
  @ApiOperation({ summary: 'The instances of a series, by instance number' })
  @ApiOkResponse({ type: [InstanceDto] })
  @ApiNotFoundResponse({ description: 'Missing, or its study outside the caller\'s scope: `{message: "Series not found."}`' })
  instances(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Series') id: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Readable> {
    // The body is already the JSON of InstanceDto[] (built by PostgreSQL), streamed as it is.
    reply.type('application/json; charset=utf-8');
    return this.studies.instancesJson(scope, id);
  }
}
