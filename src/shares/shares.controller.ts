import { Body, Controller, Get, Headers, HttpCode, Post, Req, Res } from '@nestjs/common';
import {
  ApiGoneResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OpenedShareDto, OpenShareDto } from './dto/share.dto';
import { requesterOf } from '../common/http/requester';
import { ShareLockedError, SharesService } from './shares.service';

@ApiTags('shares')
@Controller('shares')
export class SharesController {
  constructor(private readonly shares: SharesService) {}

  @Post('open')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Opens a share link (public): a viewer token that reads its one study; each 200 is one use',
  })
  @ApiOkResponse({ type: OpenedShareDto })
  @ApiNotFoundResponse({ description: 'Unknown token: `{message: "Share not found."}`' })
  @ApiGoneResponse({
    description: "Expired, used up, revoked, or its creator's account no longer reads the study: `{message}`",
  })
  @ApiUnauthorizedResponse({ description: 'Missing or wrong passcode: `{message}`' })
  @ApiTooManyRequestsResponse({
    description:
      'The 5th wrong passcode within 15 minutes locks the share for 15 minutes (even for the right one, or none): ' +
      '`{message: "Too Many Attempts."}`, `Retry-After` the seconds left',
  })
  @ApiUnprocessableEntityResponse({ description: 'token missing or not a string, passcode not a string' })
  async open(
    @Body() body: OpenShareDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<OpenedShareDto> {
    try {
      return await this.shares.open(body.token, body.passcode, requesterOf(request));
    } catch (error) {
      if (error instanceof ShareLockedError) reply.header('retry-after', String(error.retryAfterSeconds));
      throw error;
    }
  }

  @Get('report')
  @ApiOperation({
    summary: "The final report's PDF of the shared study (public; the share's viewer token as X-Viewer-Token)",
  })
  @ApiHeader({ name: 'X-Viewer-Token', required: true, description: 'the viewer token POST /api/shares/open gave' })
  @ApiProduces('application/pdf')
  @ApiOkResponse({ description: 'application/pdf', schema: { type: 'string', format: 'binary' } })
  @ApiUnauthorizedResponse({
    description: 'No viewer token, not a share\'s, expired, or its share revoked: `{message: "Unauthenticated."}`',
  })
  @ApiNotFoundResponse({ description: 'The study has no final report: `{message: "Report not found."}`' })
  async report(
    @Headers('x-viewer-token') viewerToken: string | undefined,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<Buffer> {
    const pdf = await this.shares.report(viewerToken, requesterOf(request));
    reply
      .header('content-type', 'application/pdf')
      .header('content-disposition', 'inline; filename="report.pdf"')
      .header('cache-control', 'private, no-store');
    return pdf;
  }
}
