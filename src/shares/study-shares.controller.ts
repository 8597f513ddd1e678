import { Body, Controller, Delete, Get, HttpCode, Post, Req } from '@nestjs/common';
import {
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import type { AuthUser } from '../common/auth/auth-user';
import { DataScope } from '../common/auth/data-scope';
import { Auth, CallerScope, CurrentUser } from '../common/auth/decorators';
import { UuidParam } from '../common/http/uuid-param';
import { CreatedShareDto, CreateShareDto, ShareDto } from './dto/share.dto';
import { requesterOf } from '../common/http/requester';
import { SharesService } from './shares.service';

const STUDY_NOT_FOUND = 'Missing or outside the caller\'s scope: `{message: "Study not found."}`';

@ApiTags('shares')
@Controller('studies/:id/shares')
export class StudySharesController {
  constructor(private readonly shares: SharesService) {}

  @Post()
  @Auth()
  @ApiOperation({ summary: 'A link that opens this study for someone without an account (token shown only here)' })
  @ApiCreatedResponse({ type: CreatedShareDto })
  @ApiNotFoundResponse({ description: STUDY_NOT_FOUND })
  @ApiConflictResponse({
    description:
      "The study's clinic is inactive (a study in quarantine, seen by the super admin): the link would never open. `{message}`",
  })
  @ApiUnprocessableEntityResponse({
    description: 'expires_in_hours (1-720), max_uses (1-1000), passcode (6-64 characters) or note (max 255) invalid',
  })
  create(
    @CurrentUser() user: AuthUser,
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') id: string,
    @Body() body: CreateShareDto,
    @Req() request: FastifyRequest,
  ): Promise<CreatedShareDto> {
    return this.shares.create(user, scope, id, body, requesterOf(request));
  }

  @Get()
  @Auth()
  @ApiOperation({ summary: "The study's share links (without their tokens), oldest first" })
  @ApiOkResponse({ type: [ShareDto] })
  @ApiNotFoundResponse({ description: STUDY_NOT_FOUND })
  list(@CallerScope() scope: DataScope, @UuidParam('id', 'Study') id: string): Promise<ShareDto[]> {
    return this.shares.list(scope, id);
  }

  @Delete(':shareId')
  @HttpCode(204)
  @Auth()
  @ApiOperation({ summary: 'Revokes the link: it and every viewer token it gave stop at once' })
  @ApiNoContentResponse({ description: 'Revoked (again: no change)' })
  @ApiNotFoundResponse({ description: `${STUDY_NOT_FOUND}, or \`{message: "Share not found."}\`` })
  revoke(
    @CurrentUser() user: AuthUser,
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Study') id: string,
    @UuidParam('shareId', 'Share') shareId: string,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    return this.shares.revoke(user, scope, id, shareId, requesterOf(request));
  }
}
