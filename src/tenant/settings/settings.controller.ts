import { Body, Controller, Get, Patch } from '@nestjs/common';
import {
  ApiBody,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import type { AuthUser } from '../../common/auth/auth-user';
import { Auth, CurrentUser } from '../../common/auth/decorators';
import { SettingsDto, UpdateSettingsDto } from './settings.dto';
import { SettingsService } from './settings.service';

@ApiTags('tenant')
@Controller('tenant/settings')
export class SettingsController {
  constructor(private readonly settings: SettingsService) {}

  @Get()
  @Auth()
  @ApiOperation({ summary: 'The caller’s clinic: id, name and logo' })
  @ApiOkResponse({ type: SettingsDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: 'Caller without a clinic: `{message: "Tenant not found."}`' })
  get(@CurrentUser() user: AuthUser): Promise<SettingsDto> {
    return this.settings.get(user);
  }

  @Patch()
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Set (data URL) or remove (null) the clinic’s logo' })
  @ApiBody({ type: UpdateSettingsDto })
  @ApiOkResponse({ type: SettingsDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: 'Caller without a clinic: `{message: "Tenant not found."}`' })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  update(@CurrentUser() user: AuthUser, @Body() body: UpdateSettingsDto): Promise<SettingsDto> {
    return this.settings.setLogo(user, body.logo);
  }
}
