/**
 * The sign-in form: POST /api/login (same origin, through the viewer proxy) sets the session
 * cookie; then the study list, or the page that sent here (?next=, e.g. the report page when the
 * session ended while a report was being typed). The API's own message is shown on refusal.
 */
(function () {
  'use strict';
  var form = document.getElementById('sign-in');
  var error = document.getElementById('error');
  var submit = document.getElementById('submit');
  // Where to go once signed in: the page of this site that sent here (?next=), else the study list.
  var next = '/';
  try {
    var wanted = new URL(new URLSearchParams(window.location.search).get('next') || '/', window.location.origin);
    if (wanted.origin === window.location.origin) next = wanted.pathname + wanted.search;
  } catch (e) {
    next = '/';
  }

  function show(message) {
    error.textContent = message;
    error.hidden = false;
  }

  // Already signed in: straight to the study list.
  fetch('/api/me', { credentials: 'same-origin' }).then(function (response) {
    if (response.ok) window.location.replace(next);
  }, function () {});

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    error.hidden = true;
    var email = form.email.value.trim();
    var password = form.password.value;
    if (!email || !password) return show('Enter your email and password.');
    submit.disabled = true;
    fetch('/api/login', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: email, password: password }),
    })
      .then(function (response) {
        if (response.ok) {
          window.location.replace(next);
          return;
        }
        return response.json().then(
          function (body) {
            show((body && (body.error || body.message)) || 'Sign-in failed (' + response.status + ').');
          },
          function () {
            show('Sign-in failed (' + response.status + ').');
          },
        );
      }, function () {
        show('The archive cannot be reached. Try again in a moment.');
      })
      .then(function () {
        submit.disabled = false;
      });
  });
})();
