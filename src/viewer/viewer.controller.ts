import { Body, Controller, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import {
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthUser } from '../common/auth/auth-user';
import { AuditAccess } from '../audit';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope, CurrentUser } from '../common/auth/decorators';
import { IssueViewerTokenDto, ViewerTokenDto } from './dto/issue-viewer-token.dto';
import { verdictResponse } from './verdict-response';
import { ViewerService } from './viewer.service';

@ApiTags('viewer')
@Controller('viewer')
export class ViewerController {
  constructor(private readonly viewer: ViewerService) {}

  @Post('token')
  @HttpCode(200)
  @Auth()
  @AuditAccess('viewer_token.issue', { studyBodyField: 'study_id' })
  @ApiOperation({ summary: 'A short-lived token that lets the web viewer read this study through the proxy' })
  @ApiOkResponse({ type: ViewerTokenDto })
  @ApiNotFoundResponse({ description: 'Missing or not visible to the caller: `{error: "Study not found"}`' })
  @ApiUnprocessableEntityResponse({ description: 'study_id missing or not a uuid' })
  issue(
    @CurrentUser() user: AuthUser,
    @CallerScope() scope: DataScope,
    @Body() body: IssueViewerTokenDto,
  ): Promise<ViewerTokenDto> {
    return this.viewer.issue(user, scope, body.study_id);
  }

  @Get('token/validate')
  // Its answer goes to nginx's auth subrequest only, never to a browser: no security headers.
  @RouteConfig({ helmet: { skipRoute: true } })
  @ApiOperation({
    summary: 'For the proxy\'s auth_request: may this viewer token or session read the studies in X-Original-URI?',
    description:
      'Public. Answers only 200, 401 or 403. The caller is a viewer token (X-Viewer-Token, or ' +
      '`Authorization: Bearer <uuid>`: it opens its study, its issuer\'s scope and the same patient\'s other ' +
      'studies in the clinic; a share\'s token its one study) or a user session (`Authorization: ' +
      'Bearer <access token>` or the pacs_access_token cookie: it opens the user\'s own scope). X-Original-URI is ' +
      'read as the image server reads it: `/dicom-web/studies/<uid>[/...]`, or a search at `/dicom-web/studies`, ' +
      '`/series` or `/instances` with the study filter (`StudyInstanceUID`, `0020000D`, `0020,000D` or ' +
      '`0020-000D`; once; UIDs separated by `,`). An unknown query key, a raw `#` or `\\`, a search without ' +
      'the filter, an unknown UID, a wildcard or more than 50 UIDs is 403; so is a rendering parameter out of ' +
      'bounds (`viewport` 2 or 6 integers, width and height at most 4096; `quality` 1-100; `window` three ' +
      'numbers), a rendering (`/rendered`) of a study or a series, and one of an instance whose attributes ' +
      'the image server\'s decoders are unsafe on (asked of the image server first). A credential that names more than VIEWER_REFUSED_UIDS_PER_MINUTE study UIDs it cannot read ' +
      'in a minute is refused (403) until the minute is over.',
  })
  @ApiHeader({ name: 'X-Viewer-Token', required: false })
  @ApiHeader({ name: 'X-Original-URI', required: true })
  @ApiOkResponse({ description: 'Allowed (empty body)' })
  @ApiUnauthorizedResponse({
    description: '`{error: "Missing token"}` (no token nor session) or `{error: "Invalid or expired token"}`',
  })
  @ApiForbiddenResponse({ description: '`{error: "Forbidden"}`' })
  // On a socket, ValidateRawRoute answers this path before Nest sees it, with the same statuses,
  // bodies and headers; this handler documents the route and answers in-process requests.
  async validate(
    // The raw request rather than @Headers(): no pipe runs on this hot path.
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const { status, headers, body } = verdictResponse(await this.viewer.validate(request.headers, () => request.ip));
    reply.status(status).headers(headers(request.id));
    if (body === '') reply.send();
    else reply.send(body);
  }
}
