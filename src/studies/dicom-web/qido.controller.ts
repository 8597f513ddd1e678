import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuditAccess, searchReturned } from '../../audit';
import { DataScope } from '../../common/auth/data-scope';
import { Auth, CallerScope } from '../../common/auth/decorators';
import { ApiError } from '../../common/errors/api-errors';
import { FairShare } from '../../common/fair-share/fair-share.interceptor';
import { QIDO_MAX_LIMIT, parseQidoStudyQuery, qidoTextValues, QidoQueryError } from './qido-query';
import { dicomWebRoot, toQidoStudy } from './qido-study';
import { QidoRepository } from './qido.repository';

export const DICOM_JSON = 'application/dicom+json';

const TEXT_MATCH = 'Exact, or with `*` (any run) and `?` (one character) wildcards';

/**
 * QIDO-RS on the archive's own index, for the doctors' worklist (the OHIF viewer's study list):
 * the proxy sends /dicom-web/studies here, every other DICOMweb request to the image server.
 */
@ApiTags('dicom-web')
@Controller('dicom-web')
export class QidoController {
  constructor(private readonly qido: QidoRepository) {}

  @Get('studies')
  @Auth()
  @ApiOperation({
    summary: 'QIDO-RS study search over the studies the caller may see, newest first',
    description:
      'Answered from the archive index (no image-server call), scoped as GET /api/studies. Keys are accepted as ' +
      'keywords or tags (`PatientName` or `00100010`); keys the index does not hold are ignored; `includefield` and ' +
      '`fuzzymatching` are accepted (every attribute held is always returned; matching of names is always case- and ' +
      'accent-insensitive). Each study carries 0020000D, 00100010, 00100020, 00100030, 00100040, 00080020, 00080030, ' +
      "00080050, 00081030, 00080061, 00201206, 00201208 and 00081190 (its URL under the proxy's /dicom-web/).",
  })
  @ApiQuery({
    name: 'PatientName',
    required: false,
    description: `${TEXT_MATCH}; case- and accent-insensitive. Also as 00100010.`,
  })
  @ApiQuery({ name: 'PatientID', required: false, description: `${TEXT_MATCH}. Also as 00100020.` })
  @ApiQuery({ name: 'AccessionNumber', required: false, description: `${TEXT_MATCH}. Also as 00080050.` })
  @ApiQuery({
    name: 'StudyDescription',
    required: false,
    description: `${TEXT_MATCH}; case- and accent-insensitive. Also as 00081030.`,
  })
  @ApiQuery({
    name: 'StudyInstanceUID',
    required: false,
    description: 'One UID or several separated by `,` or `\\`. Also as 0020000D.',
  })
  @ApiQuery({
    name: 'StudyDate',
    required: false,
    description: '`YYYYMMDD`, or a range `YYYYMMDD-YYYYMMDD` with either end open. Also as 00080020.',
  })
  @ApiQuery({
    name: 'ModalitiesInStudy',
    required: false,
    description: 'Modality codes separated by `,`: a study with any of them. Also as 00080061.',
  })
  @ApiQuery({
    name: 'limit',
    required: false,
    type: Number,
    description: `At most ${QIDO_MAX_LIMIT} (also the default); more is capped`,
  })
  @ApiQuery({ name: 'offset', required: false, type: Number })
  @ApiQuery({ name: 'includefield', required: false, description: 'Accepted; every attribute held is returned' })
  @ApiQuery({ name: 'fuzzymatching', required: false, enum: ['true', 'false'] })
  @ApiProduces(DICOM_JSON)
  @ApiOkResponse({
    description: 'DICOM JSON study objects (an empty array when nothing matches)',
    schema: { type: 'array', items: { type: 'object', additionalProperties: { type: 'object' } } },
  })
  @ApiBadRequestResponse({ description: 'A malformed parameter: `{message: "The StudyDate parameter must be ..."}`' })
  @AuditAccess('study.search', { search: true })
  @FairShare({ patternParams: qidoTextValues })
  async searchStudies(
    @CallerScope() scope: DataScope,
    @Query() query: Record<string, unknown>,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer> {
    let parsed;
    try {
      parsed = parseQidoStudyQuery(query);
    } catch (error) {
      if (error instanceof QidoQueryError) throw new ApiError(400, { message: error.message });
      throw error;
    }
    const rows = await this.qido.searchStudies(scope, parsed);
    searchReturned(request, rows.length);
    const root = dicomWebRoot(request.protocol, request.host);
    reply.header('content-type', DICOM_JSON).header('cache-control', 'no-store');
    // A Buffer: Fastify would append "; charset=utf-8" to a string's content type.
    return Buffer.from(JSON.stringify(rows.map((row) => toQidoStudy(row, root))));
  }
}
