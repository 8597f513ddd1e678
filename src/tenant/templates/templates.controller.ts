import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import { NotFoundDto, ValidationErrorDto } from '../../common/responses';
import type { AuthUser } from '../../common/auth/auth-user';
import { DataScope } from '../../common/auth/data-scope';
import { Auth, CallerScope, CurrentUser } from '../../common/auth/decorators';
import { UuidParam } from '../../common/http/uuid-param';
import { Paginated } from '../../common/pagination';
import { CreateTemplateDto, TemplateDto, TemplateListQueryDto, TemplatePageDto, UpdateTemplateDto } from './templates.dto';
import { TemplatesService } from './templates.service';

@ApiTags('tenant')
@ApiExtraModels(TemplateDto)
@Controller('tenant')
export class TemplatesController {
  constructor(private readonly templates: TemplatesService) {}

  @Get('templates')
  @Auth()
  @ApiOperation({
    summary: 'List report templates (50 per page, by name)',
    description:
      'Admins see every template of their clinic (super admins of every clinic; tenant_id filters); ' +
      'regular users only the active templates of their unit and the clinic’s active global ones.',
  })
  @ApiOkResponse({ type: TemplatePageDto })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  list(@CallerScope() scope: DataScope, @Query() query: TemplateListQueryDto): Promise<Paginated<TemplateDto>> {
    return this.templates.list(scope, query);
  }

  @Get('templates/:id')
  @Auth()
  @ApiOperation({ summary: 'One report template (same visibility as the list)' })
  @ApiOkResponse({ type: TemplateDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: '`{message: "Template not found."}`' })
  get(@CallerScope() scope: DataScope, @UuidParam('id', 'Template') id: string): Promise<TemplateDto> {
    return this.templates.get(scope, id);
  }

  @Get('my-template')
  @Auth()
  @ApiOperation({ summary: 'The active template of the caller’s unit, or JSON null' })
  @ApiOkResponse({ schema: { nullable: true, allOf: [{ $ref: getSchemaPath(TemplateDto) }] } })
  mine(@CurrentUser() user: AuthUser, @CallerScope() scope: DataScope): Promise<TemplateDto | null> {
    return this.templates.mine(user, scope);
  }

  @Post('templates')
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Create a report template for a unit of the clinic' })
  @ApiBody({ type: CreateTemplateDto })
  @ApiCreatedResponse({ type: TemplateDto })
  @ApiUnprocessableEntityResponse({
    type: ValidationErrorDto,
    description: 'Validation failure; errors.unit_id when the unit is not of the clinic',
  })
  create(@CallerScope() scope: DataScope, @Body() body: CreateTemplateDto): Promise<TemplateDto> {
    return this.templates.create(scope, body);
  }

  @Patch('templates/:id')
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Change a report template; every field optional; unit_id null makes it global' })
  @ApiBody({ type: UpdateTemplateDto })
  @ApiOkResponse({ type: TemplateDto })
  @ApiNotFoundResponse({ type: NotFoundDto, description: '`{message: "Template not found."}`' })
  @ApiUnprocessableEntityResponse({ type: ValidationErrorDto })
  update(
    @CallerScope() scope: DataScope,
    @UuidParam('id', 'Template') id: string,
    @Body() body: UpdateTemplateDto,
  ): Promise<TemplateDto> {
    return this.templates.update(scope, id, body);
  }

  @Delete('templates/:id')
  @HttpCode(204)
  @Auth('tenant_admin')
  @ApiOperation({ summary: 'Soft-delete a report template (kept in the table, gone from every read)' })
  @ApiNoContentResponse({ description: 'Deleted; no body' })
  @ApiNotFoundResponse({ type: NotFoundDto, description: '`{message: "Template not found."}`' })
  async remove(@CallerScope() scope: DataScope, @UuidParam('id', 'Template') id: string): Promise<void> {
    await this.templates.remove(scope, id);
  }
}
