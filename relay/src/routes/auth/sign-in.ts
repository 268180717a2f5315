import { ChallengeRequest, ChallengeResponse, Credentials, SignInRequest, TokenResponse } from '@svc/shared';
import { bearerOf } from '../../auth/agent-credentials.js';
import type { RoutePlugin } from '../../http/scopes.js';
import { createChallenge, exchangeApiKey, signIn } from '../../services/sign-in.js';

export const signInRoutes: RoutePlugin = async (app, { ctx }) => {
  app.post(
    '/api/v1/auth/sign-in/challenge',
    {
      config: { uniformError: 'invalid_challenge_request' },
      schema: {
        summary: 'Request a single-use sign-in challenge (60 s)',
        body: ChallengeRequest,
        response: { 201: ChallengeResponse },
      },
    },
    async (request, reply) => reply.status(201).send(await createChallenge(ctx, request.body)),
  );

  app.post(
    '/api/v1/auth/sign-in',
    {
      config: { uniformError: 'invalid_sign_in' },
      schema: {
        summary: 'Answer a challenge with the identity signature; returns a fresh API key and access JWT',
        body: SignInRequest,
        response: { 200: Credentials },
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
        response: { 200: TokenResponse },
      },
    },
    async (request) => exchangeApiKey(ctx, bearerOf(request.headers.authorization)),
  );
};
