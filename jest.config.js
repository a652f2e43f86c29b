// Unit tests need no database; db, integration, e2e and fault tests run against a real one
// (SQLite by default, PostgreSQL when DATABASE_URL says postgres://).
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
};
module.exports = {
  testTimeout: 30000,
  // Two files at a time on a 2-core machine: much of the suite's time is real time that tests
  // wait out (sends paced at the real 10/s, processes started and killed, sockets timing out),
  // which one worker would spend idle.
  maxWorkers: 2,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'db', testMatch: ['<rootDir>/test/db/**/*.test.ts', '<rootDir>/test/integration/**/*.test.ts'] },
    // its globalSetup installs Chromium (scripts/ensure-chromium.sh) when missing; Jest runs it
    // only when an e2e test file is selected
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'], globalSetup: '<rootDir>/test/setup/global-setup.ts' },
    { ...base, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.test.ts'] },
  ],
};
