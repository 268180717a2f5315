import { Credentials, EnrollmentRequest, ErrorResponse } from '@svc/shared';
import type { RelayContext } from '../context.js';
import { enroll } from '../services/enrollment.js';
import type { TypedApp } from './types.js';

export function enrollmentRoutes(app: TypedApp, ctx: RelayContext): void {
  app.post(
    '/api/v1/enrollment',
    {
      config: { uniformError: 'invalid_enrollment' },
      schema: {
        summary: 'Redeem an enrollment code with a signed enrollment proof',
        body: EnrollmentRequest,
        response: { 201: Credentials, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request, reply) => reply.status(201).send(await enroll(ctx, request.body)),
  );
}
