import { Body, Controller, Get, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';
import type { AuthUser } from '../../common/auth/auth-user';
import { Auth, CurrentUser } from '../../common/auth/decorators';
import { UuidParam } from '../../common/http/uuid-param';
import { Paginated } from '../../common/pagination';
import { TenantUnitFilterQueryDto } from '../../common/list-queries';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import { AdminUserDto, AdminUserPageDto, CreateUserDto, UpdateUserDto } from './users.dto';
import { UsersService } from './users.service';

@ApiTags('admin')
@Auth('super_admin')
@Controller('admin/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @ApiOperation({ summary: 'List users (50 per page, by name); search matches name and email' })
  @ApiOkResponse({ type: AdminUserPageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@Query() query: TenantUnitFilterQueryDto): Promise<Paginated<AdminUserDto>> {
    return this.users.list(query);
  }

  @Post()
  @ApiOperation({ summary: 'Create a user of a clinic (never a super admin)' })
  @ApiBody({ type: CreateUserDto })
  @ApiCreatedResponse({ type: AdminUserDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: '`{message: "Tenant not found."}` or `{message: "Unit not found."}`' })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description: 'Validation failure, an email already taken, or a unit outside the clinic (errors.unit_id)',
  })
  create(@Body() body: CreateUserDto): Promise<AdminUserDto> {
    return this.users.create(body);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change a user; every field optional; the password and is_super_admin cannot be changed' })
  @ApiBody({ type: UpdateUserDto })
  @ApiOkResponse({ type: AdminUserDto })
  @ApiNotFoundResponse({
    type: NotFoundDto,
    description: '`{message: "User not found."}`, `{message: "Tenant not found."}` or `{message: "Unit not found."}`',
  })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  update(
    @CurrentUser() caller: AuthUser,
    @UuidParam('id', 'User') id: string,
    @Body() body: UpdateUserDto,
  ): Promise<AdminUserDto> {
    return this.users.update(caller, id, body);
  }
}
