import { ApiProperty } from '@nestjs/swagger';
import { PatientDto } from '../../studies';

export { PatientDto, toPatientDto } from '../../studies';

export class PatientPageDto {
  @ApiProperty({ type: [PatientDto] }) data: PatientDto[];
  @ApiProperty() current_page: number;
  @ApiProperty({ example: 20 }) per_page: number;
  @ApiProperty() total: number;
  @ApiProperty() last_page: number;
}
