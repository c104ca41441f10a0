import { describe, expect, it } from 'vitest';
import { welcomeEmail, welcomeRecipient, type WelcomeUser } from './welcome';

describe('welcomeEmail', () => {
  it('greets by given name, then display name, then userName', () => {
    const team = { teamName: 'Acme' };
    expect(
      welcomeEmail({ userName: 'u@acme.test', givenName: 'Ada', displayName: 'A. L.', ...team }).text,
    ).toMatch(/^Hello Ada,/);
    expect(welcomeEmail({ userName: 'u@acme.test', displayName: 'A. L.', ...team }).text).toMatch(
      /^Hello A\. L\.,/,
    );
    expect(welcomeEmail({ userName: 'u@acme.test', givenName: '', ...team }).text).toMatch(
      /^Hello u@acme\.test,/,
    );
  });

  it('says which team on Cost Governance, in the subject and both parts', () => {
    const mail = welcomeEmail({ userName: 'ada@acme.test', teamName: 'Acme' });
    expect(mail.subject).toBe('Welcome to Acme on Cost Governance');
    expect(mail.text).toContain('You now have access to Acme on Cost Governance.');
    expect(mail.text).toContain('as ada@acme.test');
    expect(mail.html).toContain('You now have access to <strong>Acme</strong> on Cost Governance.');
  });

  it('escapes HTML in every value of the html part and keeps the text part as given', () => {
    const mail = welcomeEmail({
      userName: '<img src=x onerror=alert(1)>@acme.test',
      givenName: '<script>alert("hi")</script>',
      teamName: 'R&D "Labs"',
    });
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).not.toContain('<img');
    expect(mail.html).toContain('Hello &lt;script&gt;alert(&quot;hi&quot;)&lt;/script&gt;,');
    expect(mail.html).toContain('<strong>R&amp;D &quot;Labs&quot;</strong>');
    expect(mail.text).toContain('Hello <script>alert("hi")</script>,');
  });

  it('puts line breaks of identity provider values on one line, so the subject stays one header', () => {
    const mail = welcomeEmail({ userName: 'ada@acme.test', teamName: 'Acme\r\nBcc: eve@evil.test' });
    expect(mail.subject).toBe('Welcome to Acme Bcc: eve@evil.test on Cost Governance');
    expect(mail.subject).not.toMatch(/[\r\n]/);
  });
});

describe('welcomeRecipient', () => {
  const cases: Array<[string, WelcomeUser, string | undefined]> = [
    [
      'the primary e-mail before a work one',
      {
        userName: 'ada',
        emails: [
          { value: 'ada@work.test', type: 'work' },
          { value: 'ada@home.test', type: 'home', primary: true },
        ],
      },
      'ada@home.test',
    ],
    [
      'a work e-mail when none is primary (type compared regardless of case)',
      {
        userName: 'ada',
        emails: [
          { value: 'ada@home.test', type: 'home' },
          { value: 'ada@work.test', type: 'Work' },
        ],
      },
      'ada@work.test',
    ],
    [
      'the first e-mail when none is primary or work',
      {
        userName: 'ada@username.test',
        emails: [
          { value: 'ada@one.test', type: 'other' },
          { value: 'ada@two.test', primary: false },
        ],
      },
      'ada@one.test',
    ],
    [
      'the userName when it is an e-mail address and there are no e-mails',
      { userName: 'ada@acme.test', emails: [] },
      'ada@acme.test',
    ],
    [
      'nobody when the userName is not an e-mail address',
      { userName: 'ada.lovelace', emails: [] },
      undefined,
    ],
    [
      'passes over a primary value that is not one address',
      {
        userName: 'ada',
        emails: [
          { value: 'ada@x.test, eve@evil.test', primary: true },
          { value: 'ada@work.test', type: 'work' },
        ],
      },
      'ada@work.test',
    ],
    [
      'the userName when no e-mail value is an address',
      { userName: 'ada@acme.test', emails: [{ value: 'not an address', primary: true }] },
      'ada@acme.test',
    ],
  ];

  it.each(cases)('%s', (_name, user, expected) => {
    expect(welcomeRecipient(user)).toBe(expected);
  });
});
