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
import { Auth } from '../../common/auth/decorators';
import { UuidParam } from '../../common/http/uuid-param';
import { Paginated, SearchPageQueryDto } from '../../common/pagination';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import { CreateTenantDto, TenantDto, TenantPageDto, TenantStatusDto } from './tenants.dto';
import { TenantsService } from './tenants.service';

@ApiTags('admin')
@Auth('super_admin')
@Controller('admin/tenants')
export class TenantsController {
  constructor(private readonly tenants: TenantsService) {}

  @Get()
  @ApiOperation({ summary: 'List clinics (50 per page, by name); search matches name and slug' })
  @ApiOkResponse({ type: TenantPageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@Query() query: SearchPageQueryDto): Promise<Paginated<TenantDto>> {
    return this.tenants.list(query);
  }

  @Post()
  @ApiOperation({ summary: 'Create a clinic; the slug is normalised and derived from the name when absent' })
  @ApiBody({ type: CreateTenantDto })
  @ApiCreatedResponse({ type: TenantDto })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description: 'Validation failure, `A clinic with that name already exists.`, or a slug already taken',
  })
  create(@Body() body: CreateTenantDto): Promise<TenantDto> {
    return this.tenants.create(body);
  }

  @Patch(':id/status')
  @ApiOperation({
    summary: 'Activate or deactivate a clinic',
    description:
      'All units of the clinic take the same state. Users keep their own flags, but while the clinic is ' +
      'inactive they cannot sign in (403) and their tokens are refused (401); re-activation restores access.',
  })
  @ApiBody({ type: TenantStatusDto })
  @ApiOkResponse({ type: TenantDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: '`{message: "Tenant not found."}`' })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  setStatus(@UuidParam('id', 'Tenant') id: string, @Body() body: TenantStatusDto): Promise<TenantDto> {
    return this.tenants.setStatus(id, body.is_active);
  }
}
