import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import {
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import type { Readable } from 'stream';
import { AuditAccess } from '../audit';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { Auth, CallerScope } from '../common/auth/decorators';
import { FairShare } from '../common/fair-share/fair-share.interceptor';
import { UuidParam } from '../common/http/uuid-param';
import { Paginated } from '../common/pagination';
import { ListStudiesQueryDto } from './dto/list-studies.query';
import { NotReadyDto, SeriesDto, StudyDetailDto, StudyDto, StudyPageDto } from './dto/study.responses';
import { StudiesService } from './studies.service';
import { ThumbnailImage } from './studies.repository';
import { StudyImagesService } from './study-images.service';

const IMAGE_CACHE_CONTROL = 'no-cache, private';
const BINARY_JPEG = { schema: { type: 'string', format: 'binary' } };

function sendImage(reply: FastifyReply, contentType: string): void {
  reply.header('content-type', contentType).header('cache-control', IMAGE_CACHE_CONTROL);
}

@ApiTags('studies')
@Controller('studies')
export class StudiesController {
  constructor(
    private readonly studies: StudiesService,
    private readonly images: StudyImagesService,
  ) {}

  @Get()
  @Auth()
  @AuditAccess('study.search', { search: true })
  @FairShare({ patternParams: ['search'], searchesOnly: true })
  @ApiOperation({ summary: 'Studies visible to the caller, 15 per page, newest study date first' })
  @ApiOkResponse({ type: StudyPageDto })
  @ApiUnprocessableEntityResponse({
    description:
      'Invalid page, patient_uuid, exclude_id or report_status, or search over 255 characters: `{message, errors: {field: [...]}}`',
  })
  list(@CallerScope() scope: DataScope, @Query() query: ListStudiesQueryDto): Promise<Paginated<StudyDto>> {
    return this.studies.list(
      scope,
      { search: query.search, patientUuid: query.patient_uuid, excludeId: query.exclude_id, reportStatus: query.report_status },
      query.page,
    );
  }

  @Get(':id')
  @Auth()
  @AuditAccess('study.view')
  @ApiOperation({ summary: 'A study with its patient, unit and tenant' })
  @ApiOkResponse({ type: StudyDetailDto })
  @ApiNotFoundResponse({ description: 'Missing or outside the caller\'s tenant/unit: `{message: "Study not found."}`' })
  detail(@CallerScope() scope: DataScope, @UuidParam('id', 'Study') id: string): Promise<StudyDetailDto> {
    return this.studies.detail(scope, id);
  }

  @Get(':id/series')
  @Auth()
  @ApiOperation({ summary: 'The series of a study, by series number' })
  @ApiOkResponse({ type: [SeriesDto] })
  @ApiNotFoundResponse({ description: '`{message: "Study not found."}`' })
  series(@CallerScope() scope: DataScope, @UuidParam('id', 'Study') id: string): Promise<SeriesDto[]> {
    return this.studies.series(scope, id);
  }

  @Get(':id/thumbnail')
  @Auth()
  @AuditAccess('study.thumbnail')
  @ApiOperation({ summary: 'The study thumbnail (300x300 JPEG)' })
  @ApiProduces('image/jpeg')
  @ApiOkResponse(BINARY_JPEG)
  @ApiNotFoundResponse({
    type: NotReadyDto,
    description: '`{message: "Thumbnail not ready"}`: none made yet, or the study missing or outside the caller\'s scope',
  })
  async studyThumbnail(
    @CallerScope() scope: DataScope,
    @UuidParam('id', Errors.thumbnailNotReady) id: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer> {
    return this.thumbnail(reply, await this.images.studyThumbnail(scope, id));
  }

  @Get(':id/series/:seriesId/thumbnail')
  @Auth()
  @AuditAccess('series.thumbnail', { targetParam: 'seriesId' })
  @ApiOperation({ summary: 'The series thumbnail, else the study thumbnail' })
  @ApiProduces('image/jpeg')
  @ApiOkResponse(BINARY_JPEG)
  @ApiNotFoundResponse({
    type: NotReadyDto,
    description:
      '`{message: "Thumbnail not ready"}`: neither made yet, or the study missing or outside the caller\'s scope, ' +
      'or the series not of that study',
  })
  async seriesThumbnail(
    @CallerScope() scope: DataScope,
    @UuidParam('id', Errors.thumbnailNotReady) id: string,
    @UuidParam('seriesId', Errors.thumbnailNotReady) seriesId: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer> {
    return this.thumbnail(reply, await this.images.seriesThumbnail(scope, id, seriesId));
  }

  @Get(':id/instances/:instance/rendered')
  @Auth()
  @AuditAccess('study.image', { targetParam: 'instance' })
  @ApiOperation({ summary: 'A JPEG rendering of an instance (instance id) of the study, from the image server' })
  @ApiProduces('image/jpeg')
  @ApiOkResponse(BINARY_JPEG)
  @ApiNotFoundResponse({
    description:
      '`{message: "Image not available"}` on any failure, and for an image whose attributes the image ' +
      "server's decoders are unsafe on (docs/security.md)",
  })
  async rendered(
    @CallerScope() scope: DataScope,
    // Not UuidParam: every failure of this route, a malformed id included, has the same body.
    @Param('id') id: string,
    @Param('instance') instance: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Readable> {
    const image = await this.images.rendered(scope, id, instance);
    sendImage(reply, image.contentType);
    return image.body;
  }

  private thumbnail(reply: FastifyReply, image: ThumbnailImage): Buffer {
    sendImage(reply, image.contentType);
    return image.data;
  }
}
