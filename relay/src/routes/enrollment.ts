import { Credentials, EnrollmentRequest } from '@svc/shared';
import type { RoutePlugin } from '../http/scopes.js';
import { enroll } from '../services/enrollment.js';

export const enrollmentRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/enrollment',
    {
      config: { uniformError: 'invalid_enrollment' },
      schema: {
        summary: 'Redeem an enrollment code with a signed enrollment proof',
        body: EnrollmentRequest,
        response: { 201: Credentials },
      },
    },
    async (request, reply) => reply.status(201).send(await enroll(ctx, request.body)),
  );
};
