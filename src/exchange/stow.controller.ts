import { Controller, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiConsumes,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiPayloadTooLargeResponse,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
  ApiUnprocessableEntityResponse,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthUser } from '../common/auth/auth-user';
import { Auth, CurrentUser } from '../common/auth/decorators';
import { requesterOf } from '../common/http/requester';
import { UuidField } from '../common/validation/fields';
import { StowAnswer, StowService } from './stow.service';

export class StowQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'The unit the studies go to: required of a tenant or super admin' })
  @UuidField('unit_id', { optional: true })
  unit_id?: string;
}

class StowAnswerDto {
  // A DICOM JSON attribute: { vr: 'SQ', Value: [ items ] }.
  @ApiProperty({
    required: false,
    type: Object,
    additionalProperties: true,
    description: 'FailedSOPSequence: refused instances, 00081197 and 00000902 say why',
  })
  '00081198'?: object;
  @ApiProperty({
    required: false,
    type: Object,
    additionalProperties: true,
    description: 'ReferencedSOPSequence: the stored instances',
  })
  '00081199'?: object;
}

@ApiTags('dicom-web')
@Controller('dicom-web')
export class StowController {
  constructor(private readonly stow: StowService) {}

  @Post('studies')
  @HttpCode(200)
  @Auth()
  @ApiOperation({
    summary: 'STOW-RS: stores DICOM instances (multipart/related; type="application/dicom", up to 2 GiB, streamed)',
    description:
      "Each instance goes to the image server and its study to the uploader's unit (an admin names it with unit_id). " +
      'Refused, with nothing of it stored: not DICOM, a study of another clinic (for a regular user: another unit), ' +
      'an instance that would replace an archived one with other content.',
  })
  @ApiConsumes('multipart/related')
  @ApiOkResponse({ type: StowAnswerDto, description: 'application/dicom+json' })
  @ApiBadRequestResponse({
    description:
      'A body that is not multipart with its boundary, part headers over 16 KiB, or a body that broke off: `{message}`',
  })
  @ApiNotFoundResponse({ description: 'Never for this route (documented for path errors)' })
  @ApiPayloadTooLargeResponse({ description: 'Past 2 GiB: `{message: "Payload too large."}`' })
  @ApiUnsupportedMediaTypeResponse({
    description:
      'Not multipart/related of application/dicom, or without a boundary parameter: `{message: "Unsupported media type."}`',
  })
  @ApiUnprocessableEntityResponse({ description: "unit_id missing (admins), not a unit of the caller's clinic, or not a uuid" })
  async store(
    @CurrentUser() user: AuthUser,
    @Query() query: StowQueryDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<StowAnswer> {
    const answer = await this.stow.store(
      user,
      query.unit_id,
      request.headers['content-type'],
      request.body,
      requesterOf(request),
    );
    reply.type('application/dicom+json');
    return answer;
  }
}
