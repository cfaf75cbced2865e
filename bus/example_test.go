package bus_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/vigil-run/vigil/bus"
)

// Greeted is the payload of the example "example/greeted" event.
type Greeted struct{ Name string }

// GreetedEvent is a typed event key: emitters and listeners agree on the
// payload type at compile time.
var GreetedEvent = bus.NewEvent[Greeted]("example/greeted")

// GreeterConfig is the config of the example greeter plugin.
type GreeterConfig struct{ Greeting string }

// Registering a plugin: a Func with a typed config is applied in its own
// fiber, and everything it registers is undone when the fiber is disposed.
func ExampleContext_Plugin() {
	root := bus.New()
	defer root.Dispose()

	greeter := bus.PluginFunc("example/greeter", func(c *bus.Context, cfg GreeterConfig) error {
		GreetedEvent.On(c, func(_ context.Context, g Greeted) error {
			fmt.Printf("%s, %s!\n", cfg.Greeting, g.Name)
			return nil
		})
		return c.Effect(func() func() {
			return func() { fmt.Println("greeter disposed") }
		})
	})
	fiber, err := root.Context().Plugin(greeter, &GreeterConfig{Greeting: "Hello"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(fiber.Name(), fiber.State())
	_ = GreetedEvent.Emit(context.Background(), root.Context(), Greeted{Name: "Ada"})
	_ = fiber.Dispose()
	_ = GreetedEvent.Emit(context.Background(), root.Context(), Greeted{Name: "nobody"})
	// Output:
	// example/greeter active
	// Hello, Ada!
	// greeter disposed
}

// Emitting a typed event: listeners run in order, Prepend first, and the
// first error stops the dispatch.
func ExampleEvent_Emit() {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()

	GreetedEvent.On(c, func(_ context.Context, g Greeted) error {
		fmt.Println("second:", g.Name)
		return nil
	})
	GreetedEvent.On(c, func(_ context.Context, g Greeted) error {
		fmt.Println("first:", g.Name)
		return nil
	}, bus.Prepend)
	GreetedEvent.On(c, func(_ context.Context, g Greeted) error {
		return fmt.Errorf("no greeting for %s", g.Name)
	})
	err := GreetedEvent.Emit(context.Background(), c, Greeted{Name: "Grace"})
	fmt.Println(err)
	// Output:
	// first: Grace
	// second: Grace
	// plugin "root": example/greeted: no greeting for Grace
}

// Render is an example waterfall: each listener wraps the rest, and the
// fallback renders when every listener passed the request on.
var Render = bus.NewWaterfall[string, string]("example/render")

func ExampleWaterfall_Run() {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()

	Render.On(c, func(ctx context.Context, text string, next bus.Next[string, string]) (string, error) {
		out, err := next(ctx, strings.TrimSpace(text))
		return "<p>" + out + "</p>", err
	})
	Render.On(c, func(ctx context.Context, text string, next bus.Next[string, string]) (string, error) {
		if text == "" {
			return "(empty)", nil // short-circuit: the fallback is not called
		}
		return next(ctx, text)
	})
	fallback := func(_ context.Context, text string) (string, error) { return strings.ToUpper(text), nil }

	for _, in := range []string{"  hello ", "   "} {
		out, _ := Render.Run(context.Background(), c, in, fallback)
		fmt.Println(out)
	}
	// Output:
	// <p>HELLO</p>
	// <p>(empty)</p>
}

// Clock is an example service.
type Clock interface{ Now() string }

type fixedClock string

func (f fixedClock) Now() string { return string(f) }

// ClockService is the typed key of the example clock service.
var ClockService = bus.NewService[Clock]("example/clock")

// A service with inject: the consumer declares the service it requires,
// stays pending until it is provided, and is disposed and re-applied when
// the provider goes and comes back.
func ExampleService_Provide() {
	root := bus.New()
	defer root.Dispose()

	consumer := bus.PluginFunc("example/consumer", func(c *bus.Context, _ struct{}) error {
		clock, err := ClockService.Get(c)
		if err != nil {
			return err
		}
		fmt.Println("consumer sees", clock.Now())
		return nil
	}, bus.Requires(ClockService))
	fiber, _ := root.Context().Plugin(consumer, nil)
	fmt.Println(fiber.State(), root.Pending())

	provider := bus.PluginFunc("example/clock", func(c *bus.Context, at string) error {
		_, err := ClockService.Provide(c, fixedClock(at))
		return err
	})
	clock, _ := root.Context().Plugin(provider, "12:00")
	fmt.Println(fiber.State())

	_ = clock.Update("13:00") // the provider reloads; its dependent follows
	_ = clock.Dispose()
	fmt.Println(fiber.State())
	// Output:
	// pending [{example/consumer [example/clock]}]
	// consumer sees 12:00
	// active
	// consumer sees 13:00
	// pending
}

// PortConfig checks itself: the bus calls Validate before the plugin runs.
type PortConfig struct{ Port int }

// Validate refuses a port out of range.
func (c *PortConfig) Validate() error {
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("port %d is out of range", c.Port)
	}
	return nil
}

// A config with a Validate method is validated whoever applies the plugin:
// applied by hand with an invalid config, the plugin does not run.
func ExampleValidator() {
	root := bus.New()
	defer root.Dispose()

	listener := bus.PluginFunc("example/listener", func(_ *bus.Context, cfg PortConfig) error {
		fmt.Println("listening on", cfg.Port)
		return nil
	})
	if _, err := root.Context().Plugin(listener, PortConfig{Port: 0}); err != nil {
		fmt.Println(err)
	}
	fiber, _ := root.Context().Plugin(listener, PortConfig{Port: 8080})
	fmt.Println(fiber.State())
	// Output:
	// plugin "example/listener": validate: port 0 is out of range
	// listening on 8080
	// active
}

// HelloConfig is the config of the example hello plugin.
type HelloConfig struct {
	Name string `yaml:"name"`
}

// Hello is registered at init, as a plugin package registers its plugin:
// one statement builds the plugin and adds it to the module registry,
// where plugins.yaml and vigil.Plugin find it by name.
var Hello = bus.RegisterFunc("example/hello", "says hello to its config's name",
	func(c *bus.Context, cfg HelloConfig) error {
		fmt.Println("hello,", cfg.Name)
		return nil
	})

// Loading a registered plugin by name, as the config loader does: the
// module's Config is the value an entry's config decodes into, and New
// the plugin to apply it to. A Go program may apply Hello itself too.
func ExampleRegisterFunc() {
	root := bus.New()
	defer root.Dispose()

	m, ok := bus.LookupModule("example/hello")
	if !ok {
		fmt.Println("not registered")
		return
	}
	fmt.Println(m.Name, "from", m.Package+":", m.Description)
	cfg := m.Config().(*HelloConfig) // the loader decodes the entry here
	cfg.Name = "Ada"
	if _, err := root.Context().Plugin(m.New(), cfg); err != nil {
		fmt.Println(err)
	}
	if _, err := root.Context().Plugin(Hello, HelloConfig{Name: "Grace"}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// example/hello from github.com/vigil-run/vigil/bus_test: says hello to its config's name
	// hello, Ada
	// hello, Grace
}
