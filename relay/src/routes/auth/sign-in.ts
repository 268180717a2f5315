import {
  ChallengeRequest,
  ChallengeResponse,
  Credentials,
  ErrorResponse,
  SignInRequest,
  TokenResponse,
} from '@svc/shared';
import { bearerOf } from '../../auth/agent-credentials.js';
import type { RelayContext } from '../../context.js';
import { createChallenge, exchangeApiKey, signIn } from '../../services/sign-in.js';
import type { TypedApp } from '../types.js';

export function signInRoutes(app: TypedApp, ctx: RelayContext): void {
  app.post(
    '/api/v1/auth/sign-in/challenge',
    {
      config: { uniformError: 'invalid_challenge_request' },
      schema: {
        summary: 'Request a single-use sign-in challenge (60 s)',
        body: ChallengeRequest,
        response: { 201: ChallengeResponse, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request, reply) => reply.status(201).send(createChallenge(ctx, request.body)),
  );

  app.post(
    '/api/v1/auth/sign-in',
    {
      config: { uniformError: 'invalid_sign_in' },
      schema: {
        summary: 'Answer a challenge with the identity signature; returns a fresh API key and access JWT',
        body: SignInRequest,
        response: { 200: Credentials, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => signIn(ctx, request.body),
  );

  app.post(
    '/api/v1/auth/token',
    {
      schema: {
        summary: 'Exchange the API key (Authorization: Bearer svc_ak_…) for an access JWT',
        security: [{ apiKey: [] }],
        response: { 200: TokenResponse, '4xx': ErrorResponse, '5xx': ErrorResponse },
      },
    },
    async (request) => exchangeApiKey(ctx, bearerOf(request.headers.authorization)),
  );
}
