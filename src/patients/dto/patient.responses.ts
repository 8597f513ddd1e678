import { LAST_PAGE_DESCRIPTION, TOTAL_DESCRIPTION, TOTAL_EXACT_DESCRIPTION } from '../../common/responses';
import { ApiProperty } from '@nestjs/swagger';
import { PatientDto } from '../../studies';

export { PatientDto, toPatientDto } from '../../studies';

export class PatientPageDto {
  @ApiProperty({ type: [PatientDto] }) data: PatientDto[];
  @ApiProperty() current_page: number;
  @ApiProperty({ example: 20 }) per_page: number;
  @ApiProperty({ description: TOTAL_DESCRIPTION }) total: number;
  @ApiProperty({ description: LAST_PAGE_DESCRIPTION }) last_page: number;
  @ApiProperty({ description: TOTAL_EXACT_DESCRIPTION }) total_exact: boolean;
}
