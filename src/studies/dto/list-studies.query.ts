import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import type { ReportStatus } from '../../database/entities';
import { SearchPageQueryDto } from '../../common/pagination';
import { UuidValue } from '../../common/validation/fields';

/** GET /api/studies: `search` (patient name, patient id, accession number), filters, `page`. */
export class ListStudiesQueryDto extends SearchPageQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'Only the studies of this patient' })
  @IsOptional()
  @UuidValue('patient_uuid')
  patient_uuid?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Leave this study out (e.g. "other studies of the patient")' })
  @IsOptional()
  @UuidValue('exclude_id')
  exclude_id?: string;

  @ApiPropertyOptional({
    enum: ['pending', 'draft', 'final'],
    description:
      'Only the studies with this report status (a worklist); combinable with search. Not a search: the total stays exact.',
  })
  @IsOptional()
  @IsIn(['pending', 'draft', 'final'], { message: 'The selected report status is invalid.' })
  report_status?: ReportStatus;
}
