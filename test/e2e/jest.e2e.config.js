// Temporary: runs the e2e suite alone until the root jest.config.js has an e2e project.
module.exports = {
  rootDir: '../..',
  testTimeout: 90000,
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
};
