import pino, { type Logger } from 'pino';

export type { Logger };

// Anything that could carry a secret is redacted by key name, wherever it sits in a log object.
export const REDACT_PATHS = [
  'apiKey',
  'api_key',
  'key',
  'accessToken',
  'refreshToken',
  'token',
  'sessionToken',
  'authorization',
  'password',
  'secret',
  '*.apiKey',
  '*.api_key',
  '*.accessToken',
  '*.refreshToken',
  '*.token',
  '*.authorization',
  '*.Authorization',
  '*["x-service-api-key"]',
  '*["X-SERVICE-API-KEY"]',
  '*.secret',
  'req.headers.authorization',
  'req.headers.cookie',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
